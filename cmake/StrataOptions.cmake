# Resolves STRATA_ENABLE_CUDA and STRATA_ENABLE_MPI (AUTO|ON|OFF) into
# STRATA_HAVE_CUDA / STRATA_HAVE_MPI and reports the outcome at configure
# time, then sets up sanitizers and fuzzers. The CUDA and MPI detections live
# in runtime/cmake/, shared with the runtime's own build (`cmake -S runtime`).
include(StrataCuda) # runtime/cmake/StrataCuda.cmake
include(StrataMpi)  # runtime/cmake/StrataMpi.cmake

# ---- Sanitizers and fuzzers ---------------------------------------------
# STRATA_SANITIZE: a comma-separated list handed to -fsanitize= for every
# Strata target (dialect, compiler libraries, tools, runtime, tests), e.g.
# "address,undefined" or "thread". Undefined behaviour aborts (no recovery)
# so that it fails the test that hit it. Debian's libMLIR.so is not
# instrumented. STRATA_BUILD_FUZZERS builds the libFuzzer targets in fuzz/
# (clang only) and compiles every library with coverage for them
# (-fsanitize=fuzzer-no-link); combine it with STRATA_SANITIZE=address,undefined.
set(STRATA_SANITIZE "" CACHE STRING
    "Sanitizers for every Strata target (e.g. address,undefined or thread; empty: none)")
option(STRATA_BUILD_FUZZERS "Build the libFuzzer targets in fuzz/ (clang only)" OFF)

set(STRATA_SANITIZE_FLAGS)
if(STRATA_SANITIZE)
  string(REPLACE "," ";" _strata_sanitizers "${STRATA_SANITIZE}")
  foreach(sanitizer ${_strata_sanitizers})
    if(NOT sanitizer MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "STRATA_SANITIZE: unknown sanitizer '${sanitizer}' "
                          "(expected address, undefined, thread or leak)")
    endif()
  endforeach()
  if("thread" IN_LIST _strata_sanitizers AND "address" IN_LIST _strata_sanitizers)
    message(FATAL_ERROR "STRATA_SANITIZE: thread and address cannot be combined")
  endif()
  if(STRATA_HAVE_CUDA)
    message(FATAL_ERROR "STRATA_SANITIZE needs -DSTRATA_ENABLE_CUDA=OFF "
                        "(nvcc code cannot be instrumented)")
  endif()
  list(APPEND STRATA_SANITIZE_FLAGS -fsanitize=${STRATA_SANITIZE} -fno-omit-frame-pointer)
  if("undefined" IN_LIST _strata_sanitizers)
    list(APPEND STRATA_SANITIZE_FLAGS -fno-sanitize-recover=undefined)
  endif()
  # Line tables only: reports name file and line at little compile cost.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${STRATA_SANITIZE_FLAGS};-gline-tables-only>")
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${STRATA_SANITIZE_FLAGS}>")
  # Default runtime options (see the file) in every executable: an object
  # library linked to every target created after this point.
  add_library(strata_sanitizer_defaults OBJECT
              ${CMAKE_CURRENT_LIST_DIR}/SanitizerDefaults.cpp)
  link_libraries(strata_sanitizer_defaults)
  message(STATUS "Strata: sanitizers ON (${STRATA_SANITIZE})")
endif()

if(STRATA_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "STRATA_BUILD_FUZZERS needs clang (libFuzzer)")
  endif()
  if(STRATA_HAVE_CUDA)
    message(FATAL_ERROR "STRATA_BUILD_FUZZERS needs -DSTRATA_ENABLE_CUDA=OFF")
  endif()
  if(NOT STRATA_SANITIZE)
    message(WARNING "STRATA_BUILD_FUZZERS without STRATA_SANITIZE: the fuzzers "
                    "only find crashes, not memory errors")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>")
  message(STATUS "Strata: libFuzzer targets ON (fuzz/)")
endif()
