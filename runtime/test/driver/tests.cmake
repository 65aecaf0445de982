# Tests of the driver side of the runtime: plan loader, initialisation, data,
# safetensors and checkpoints, executor, traces and the strata-run tool.
# Binaries end in "Tests" and land in ${STRATA_RUNTIME_UNIT_DIR}, where lit's
# GoogleTest format finds them.

function(strata_add_driver_test name)
  add_executable(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE strata_runtime nlohmann_json::nlohmann_json
                        GTest::gtest GTest::gtest_main)
  target_compile_options(${name} PRIVATE -fexceptions)
  target_compile_definitions(${name} PRIVATE
    STRATA_DRIVER_INPUTS="${CMAKE_CURRENT_LIST_DIR}/Inputs"
    STRATA_RUN_PATH="$<TARGET_FILE:strata-run>")
  set_target_properties(${name} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${STRATA_RUNTIME_UNIT_DIR})
  add_dependencies(${name} strata-run)
endfunction()

strata_add_driver_test(StrataPlanTests
  ${CMAKE_CURRENT_LIST_DIR}/PlanTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/LivenessTest.cpp)
strata_add_driver_test(StrataDriverTests
  ${CMAKE_CURRENT_LIST_DIR}/InitTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SafetensorsTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/DataTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/TrainTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/StrataRunTest.cpp
  ${CMAKE_CURRENT_LIST_DIR}/SwapTest.cpp)
