# Test of the CUDA kernels against the CPU kernels, and of strataGemm
# against cuBLAS. A host-compiler C++ file: it needs the CUDA toolkit's
# include directory, runtime/src/cuda (CudaKernels.h), the runtime, the CUDA
# kernel objects (STRATA_RT_CUDA_KERNEL_SOURCES), gtest, CUDA::cudart and
# CUDA::cublas. Tests that need a device skip themselves without one; the
# registry coverage test runs everywhere.
set(STRATA_RT_CUDA_TEST_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/CudaKernelsTest.cpp
  )
