# Tests of the communicators. StrataCommTests (gtest, found by lit in
# ${STRATA_RUNTIME_UNIT_DIR}) runs without mpirun: its MPI tests use one rank
# (MPI singleton) or skip. strata-comm-check is meant for
# `mpirun -np N strata-comm-check`: every collective on random data, link
# emulation timing and timeouts; it is not a *Tests binary, so lit does not
# run it.
add_executable(StrataCommTests ${CMAKE_CURRENT_LIST_DIR}/CommTest.cpp)
target_link_libraries(StrataCommTests PRIVATE strata_runtime GTest::gtest
                      GTest::gtest_main)
target_compile_options(StrataCommTests PRIVATE -fexceptions)
target_include_directories(StrataCommTests PRIVATE
                           ${CMAKE_CURRENT_LIST_DIR}/../../src/comm)
set_target_properties(StrataCommTests PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${STRATA_RUNTIME_UNIT_DIR})

add_executable(strata-comm-check ${CMAKE_CURRENT_LIST_DIR}/CommCheck.cpp)
target_link_libraries(strata-comm-check PRIVATE strata_runtime)
set_target_properties(strata-comm-check PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${STRATA_TOOLS_DIR})
