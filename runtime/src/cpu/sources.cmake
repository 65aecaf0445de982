# CPU kernels, GEMM, thread pool and tensor helpers.
set(STRATA_RT_CPU_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/Tensor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ThreadPool.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Gemm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Kernels.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsDense.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsNN.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsConv.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsOptim.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsComm.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsCopy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsCompress.cpp
  ${CMAKE_CURRENT_LIST_DIR}/VectorMath.cpp
  ${CMAKE_CURRENT_LIST_DIR}/Compress.cpp
  ${CMAKE_CURRENT_LIST_DIR}/CompressReference.cpp
  )
