# Unit tests of the GEMM tiling search (strata_tune, strata-tune/Tune.h).
# Included from runtime/test/CMakeLists.txt; the binary goes to
# ${STRATA_RUNTIME_UNIT_DIR}.
add_executable(StrataTuneTests ${CMAKE_CURRENT_LIST_DIR}/TuneTest.cpp)
target_link_libraries(StrataTuneTests PRIVATE strata_tune GTest::gtest
                      GTest::gtest_main)
target_compile_options(StrataTuneTests PRIVATE -fexceptions -O2)
set_target_properties(StrataTuneTests PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${STRATA_RUNTIME_UNIT_DIR})
