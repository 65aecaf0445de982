# The CUDA backend (built only where nvcc is found): the device, the NCCL
# communicator and the CUDA kernels of every plan op (kernels.cmake).
set(STRATA_RT_CUDA_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/CudaBackend.cu
  ${CMAKE_CURRENT_LIST_DIR}/NcclCommunicator.cu
  )
include(${CMAKE_CURRENT_LIST_DIR}/kernels.cmake) # STRATA_RT_CUDA_KERNEL_SOURCES
list(APPEND STRATA_RT_CUDA_SOURCES ${STRATA_RT_CUDA_KERNEL_SOURCES})
