# Unit tests of the CPU kernels, GEMM, thread pool and tensor helpers.
# Included from runtime/test/CMakeLists.txt; binaries go to
# ${STRATA_RUNTIME_UNIT_DIR} where lit's GoogleTest format finds them.
function(strata_add_cpu_test name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE strata_runtime GTest::gtest
                        GTest::gtest_main)
  # Internal headers (GemmInternal.h) for the ISA hooks.
  target_include_directories(${name} PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/../../src/cpu)
  target_compile_options(${name} PRIVATE -fexceptions -O2)
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${STRATA_RUNTIME_UNIT_DIR})
endfunction()

strata_add_cpu_test(StrataCpuSupportTests
  ${CMAKE_CURRENT_LIST_DIR}/TensorTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/ThreadPoolTest.cpp)
strata_add_cpu_test(StrataGemmTests
  ${CMAKE_CURRENT_LIST_DIR}/GemmTest.cpp)
strata_add_cpu_test(StrataBf16Tests
  ${CMAKE_CURRENT_LIST_DIR}/Bf16Test.cpp)
strata_add_cpu_test(StrataKernelsTests
  ${CMAKE_CURRENT_LIST_DIR}/KernelsForwardTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsBackwardTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsOptimTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsFusedTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsVerifyTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsDeterminismTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/KernelsBf16Test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/VectorMathTest.cpp)
strata_add_cpu_test(StrataCompressTests
  ${CMAKE_CURRENT_LIST_DIR}/CompressTest.cpp)
