# strata_find_numpy_python(VAR): the first Python with numpy, for the tests
# of the Python module: the one CMake finds, else the system's (Debian's
# python3-numpy), else the one found (whose tests then skip with 77).
function(strata_find_numpy_python var)
  find_package(Python3 COMPONENTS Interpreter)
  set(found ${Python3_EXECUTABLE})
  foreach(python ${Python3_EXECUTABLE} /usr/bin/python3)
    execute_process(COMMAND ${python} -c "import numpy" RESULT_VARIABLE rc
                    OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(found ${python})
      break()
    endif()
  endforeach()
  set(${var} ${found} PARENT_SCOPE)
endfunction()
