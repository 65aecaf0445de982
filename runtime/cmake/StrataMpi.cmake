# Finds MPI, the engine of multi-rank CPU runs, for the whole tree
# (cmake/StrataOptions.cmake includes this file) and for the runtime on its
# own (`cmake -S runtime`).
#
#   STRATA_ENABLE_MPI (cache, AUTO|ON|OFF): AUTO uses MPI where it is found,
#     ON fails without it, OFF never uses it.
#
# Sets STRATA_HAVE_MPI (ON|OFF); when ON, MPI::MPI_CXX is defined.
include_guard(GLOBAL)

set(STRATA_ENABLE_MPI AUTO CACHE STRING "Build the MPI communicator (AUTO|ON|OFF)")
set_property(CACHE STRATA_ENABLE_MPI PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${STRATA_ENABLE_MPI}" STRATA_ENABLE_MPI)
if(NOT STRATA_ENABLE_MPI MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STRATA_ENABLE_MPI must be AUTO, ON or OFF "
                      "(got '${STRATA_ENABLE_MPI}')")
endif()

set(STRATA_HAVE_MPI OFF)
if(NOT STRATA_ENABLE_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(STRATA_HAVE_MPI ON)
  elseif(STRATA_ENABLE_MPI STREQUAL "ON")
    message(FATAL_ERROR "STRATA_ENABLE_MPI=ON but no MPI was found")
  endif()
endif()
if(STRATA_HAVE_MPI)
  message(STATUS "Strata: MPI communicator ON (${MPI_CXX_LIBRARIES})")
else()
  message(STATUS "Strata: MPI communicator OFF (STRATA_ENABLE_MPI=${STRATA_ENABLE_MPI})")
endif()
