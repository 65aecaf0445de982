# Resolves STRATA_ENABLE_CUDA and STRATA_ENABLE_MPI (AUTO|ON|OFF) into
# STRATA_HAVE_CUDA / STRATA_HAVE_MPI and reports the outcome at configure time.

function(strata_check_tristate name)
  string(TOUPPER "${${name}}" value)
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name} must be AUTO, ON or OFF (got '${${name}}')")
  endif()
  set(${name} ${value} PARENT_SCOPE)
endfunction()

strata_check_tristate(STRATA_ENABLE_CUDA)
strata_check_tristate(STRATA_ENABLE_MPI)

# ---- CUDA ---------------------------------------------------------------
set(STRATA_HAVE_CUDA OFF)
if(NOT STRATA_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80;90")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      find_path(STRATA_NCCL_INCLUDE_DIR nccl.h
        HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
      find_library(STRATA_NCCL_LIBRARY nccl
        HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
      set(STRATA_HAVE_CUDA ON)
    endif()
  endif()
  if(STRATA_ENABLE_CUDA STREQUAL "ON" AND NOT STRATA_HAVE_CUDA)
    message(FATAL_ERROR "STRATA_ENABLE_CUDA=ON but no CUDA toolkit was found")
  endif()
endif()
if(STRATA_HAVE_CUDA)
  message(STATUS "Strata: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}, NCCL: "
                 "${STRATA_NCCL_LIBRARY})")
else()
  message(STATUS "Strata: CUDA backend OFF (STRATA_ENABLE_CUDA=${STRATA_ENABLE_CUDA})")
endif()

# ---- MPI ----------------------------------------------------------------
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
