# CUDA kernels of the plan's instructions (CudaKernels.h) and Strata's own
# SGEMM. Compiled by nvcc (C++17) with runtime/include and runtime/src on
# the include path; they link against CUDA::cudart and CUDA::cublas.
# embedding_grad uses CUB (header-only, part of the toolkit).
set(STRATA_RT_CUDA_KERNEL_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernels.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaGemm.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsDense.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsNN.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsConv.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsOptim.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsComm.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsAsync.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsCopy.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsCompress.cu
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsSlice.cu
  )
