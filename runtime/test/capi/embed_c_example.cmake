# ctest capi-embed-c-example: builds examples/embed-c/train_mlp.c with the
# command line of examples/embed-c/README.md, trains PLAN with it and checks
# that the final loss is below the first.
#
#   cmake -DCC=cc -DSOURCE=train_mlp.c -DINCLUDE_DIR=runtime/include
#         -DLIB_DIR=build-rt/lib -DPLAN=mlp.json -DWORK_DIR=dir -P this
set(exe ${WORK_DIR}/train_mlp)
execute_process(
  COMMAND ${CC} -std=c99 -Wall -Wextra -Werror -pedantic -I${INCLUDE_DIR}
          ${SOURCE} -L${LIB_DIR} -lstrata_rt_c -Wl,-rpath,${LIB_DIR} -o ${exe}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building ${SOURCE} failed (${rc})")
endif()
execute_process(COMMAND ${exe} ${PLAN} OUTPUT_VARIABLE out
                RESULT_VARIABLE rc)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "train_mlp exited with ${rc}")
endif()
if(NOT out MATCHES "first loss ([0-9.eE+-]+), final loss ([0-9.eE+-]+)")
  message(FATAL_ERROR "no 'first loss X, final loss Y' line")
endif()
if(NOT CMAKE_MATCH_2 LESS CMAKE_MATCH_1)
  message(FATAL_ERROR "the final loss ${CMAKE_MATCH_2} is not below the "
                      "first ${CMAKE_MATCH_1}")
endif()
