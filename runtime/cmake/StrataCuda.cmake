# Finds what the runtime's CUDA backend needs, for the whole tree
# (cmake/StrataOptions.cmake includes this file) and for the runtime on its
# own (`cmake -S runtime`): nvcc, the CUDA toolkit (cudart, cuBLAS) and NCCL.
#
#   STRATA_ENABLE_CUDA (cache, AUTO|ON|OFF): AUTO builds the backend where
#     nvcc and the toolkit are found, ON fails without them, OFF never
#     builds it.
#
# Sets STRATA_HAVE_CUDA (ON|OFF) and, when ON, enables the CUDA language
# (CMAKE_CUDA_ARCHITECTURES 80;90 unless given) and sets
# STRATA_NCCL_INCLUDE_DIR and STRATA_NCCL_LIBRARY (cache). A toolkit without
# NCCL is an error, not a silent build without the backend: install NCCL or
# set STRATA_ENABLE_CUDA=OFF.
include_guard(GLOBAL)

set(STRATA_ENABLE_CUDA AUTO CACHE STRING "Build the CUDA backend (AUTO|ON|OFF)")
set_property(CACHE STRATA_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${STRATA_ENABLE_CUDA}" STRATA_ENABLE_CUDA)
if(NOT STRATA_ENABLE_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STRATA_ENABLE_CUDA must be AUTO, ON or OFF "
                      "(got '${STRATA_ENABLE_CUDA}')")
endif()

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
      if(NOT STRATA_NCCL_INCLUDE_DIR OR NOT STRATA_NCCL_LIBRARY)
        message(FATAL_ERROR "the CUDA backend needs NCCL (nccl.h, libnccl), "
                            "which was not found next to the CUDA toolkit; "
                            "install it or set STRATA_ENABLE_CUDA=OFF")
      endif()
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
