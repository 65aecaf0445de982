# Tests of the C API (strata-rt/strata_rt.h, libstrata_rt_c.so), run by
# ctest: a C99 program through every entry point and error path, a C++
# reference check against the Executor and train(), the embed-c example built
# with its documented command line, and the Python module.

set(STRATA_CAPI_INPUTS ${CMAKE_CURRENT_LIST_DIR}/../driver/Inputs)
set(STRATA_CAPI_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/capi)
file(MAKE_DIRECTORY ${STRATA_CAPI_SCRATCH})

add_executable(strata-capi-test ${CMAKE_CURRENT_LIST_DIR}/capi_test.c)
set_target_properties(strata-capi-test PROPERTIES
  C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(strata-capi-test PRIVATE -Wall -Wextra -Werror
                       -pedantic)
target_link_libraries(strata-capi-test PRIVATE strata_rt_c)
add_test(NAME capi-c
  COMMAND strata-capi-test ${STRATA_CAPI_INPUTS}/mlp.json
          ${STRATA_CAPI_INPUTS}/regression.json ${STRATA_CAPI_SCRATCH})

add_executable(StrataCApiReferenceTests
  ${CMAKE_CURRENT_LIST_DIR}/CApiReferenceTest.cpp)
target_link_libraries(StrataCApiReferenceTests PRIVATE strata_rt_c
                      strata_runtime GTest::gtest GTest::gtest_main)
target_compile_options(StrataCApiReferenceTests PRIVATE -fexceptions)
target_compile_definitions(StrataCApiReferenceTests PRIVATE
  STRATA_DRIVER_INPUTS="${STRATA_CAPI_INPUTS}")
add_test(NAME capi-reference COMMAND StrataCApiReferenceTests)

# examples/embed-c: compiled at test time with the command line its README
# documents, then trained on the MLP plan.
set(STRATA_EMBED_C_SOURCE
  ${CMAKE_CURRENT_LIST_DIR}/../../../examples/embed-c/train_mlp.c)
# Not in sanitizer builds: programs built outside the build (the example,
# the Python interpreter) do not carry the sanitizer runtime the libraries
# need.
if(EXISTS ${STRATA_EMBED_C_SOURCE} AND NOT STRATA_SANITIZE)
  add_test(NAME capi-embed-c-example
    COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER}
            -DSOURCE=${STRATA_EMBED_C_SOURCE}
            -DINCLUDE_DIR=${CMAKE_CURRENT_LIST_DIR}/../../include
            -DLIB_DIR=$<TARGET_FILE_DIR:strata_rt_c>
            -DPLAN=${STRATA_CAPI_INPUTS}/mlp.json
            -DWORK_DIR=${STRATA_CAPI_SCRATCH}
            -P ${CMAKE_CURRENT_LIST_DIR}/embed_c_example.cmake)
endif()

# python/strata over the C API (exit 77, a skip, without numpy).
set(STRATA_PYTHON_DIR ${CMAKE_CURRENT_LIST_DIR}/../../../python)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/StrataPython.cmake)
strata_find_numpy_python(STRATA_CAPI_PYTHON)
if(STRATA_CAPI_PYTHON AND EXISTS ${STRATA_PYTHON_DIR}/tests AND
   NOT STRATA_SANITIZE)
  add_test(NAME capi-python
    COMMAND ${STRATA_CAPI_PYTHON} ${STRATA_PYTHON_DIR}/tests/test_runtime.py -v)
  set_tests_properties(capi-python PROPERTIES
    SKIP_RETURN_CODE 77
    ENVIRONMENT "STRATA_LIB_DIR=$<TARGET_FILE_DIR:strata_rt_c>;STRATA_RUN=$<TARGET_FILE:strata-run>;PYTHONPATH=${STRATA_PYTHON_DIR};STRATA_TEST_INPUTS=${STRATA_CAPI_INPUTS}")
endif()
