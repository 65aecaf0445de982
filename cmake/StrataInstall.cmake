# `cmake --install build --prefix P`: the tools, the C API libraries
# (Strata::CAPI, the compiler; Strata::Runtime, the runtime), the compiler
# and runtime headers, the docs, the target descriptions, and
# lib/cmake/strata/StrataConfig.cmake for find_package(Strata CONFIG).
# The compiler's C++ libraries are installed as static archives for
# reference but not exported: embedders use the C APIs.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# A sanitizer build links every target with the sanitizer runtime's flags
# (strata_sanitizer_defaults): it is for testing, not for installing.
if(STRATA_SANITIZE)
  return()
endif()

set(STRATA_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/strata)

foreach(tool strata-opt strata-model strata-translate strata-partition
             strata-pack strata-tune strata-run strata-comm-check)
  if(TARGET ${tool})
    # libMLIR.so lives in LLVM's own library folder, not on the loader path.
    set_target_properties(${tool} PROPERTIES
      INSTALL_RPATH "${LLVM_LIBRARY_DIR};$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# The installed libraries find libMLIR.so (and each other) where they were
# built against.
set_target_properties(StrataCAPI PROPERTIES
  EXPORT_NAME CAPI
  INSTALL_RPATH "${LLVM_LIBRARY_DIR};$ORIGIN")
target_include_directories(StrataCAPI SYSTEM INTERFACE
  $<INSTALL_INTERFACE:${MLIR_INCLUDE_DIRS}>)
set(STRATA_EXPORTED StrataCAPI)
if(TARGET strata_rt_c)
  set_target_properties(strata_rt_c PROPERTIES
    EXPORT_NAME Runtime
    INSTALL_RPATH "$ORIGIN")
  list(APPEND STRATA_EXPORTED strata_rt_c)
endif()
install(TARGETS ${STRATA_EXPORTED} EXPORT StrataTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${STRATA_SOURCE_DIR}/include/strata-c
                  ${STRATA_SOURCE_DIR}/include/strata
                  ${STRATA_SOURCE_DIR}/runtime/include/strata-rt
                  ${STRATA_SOURCE_DIR}/runtime/include/strata-tune
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def" PATTERN "*.td")
install(DIRECTORY ${STRATA_BINARY_DIR}/include/strata
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc")
install(DIRECTORY ${STRATA_SOURCE_DIR}/docs/
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${STRATA_SOURCE_DIR}/targets/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/strata/targets)

install(EXPORT StrataTargets NAMESPACE Strata::
  DESTINATION ${STRATA_INSTALL_CMAKE_DIR})
configure_package_config_file(
  ${STRATA_SOURCE_DIR}/cmake/StrataConfig.cmake.in
  ${STRATA_BINARY_DIR}/cmake/StrataConfig.cmake
  INSTALL_DESTINATION ${STRATA_INSTALL_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(
  ${STRATA_BINARY_DIR}/cmake/StrataConfigVersion.cmake
  VERSION 0.1.0 COMPATIBILITY SameMinorVersion)
install(FILES ${STRATA_BINARY_DIR}/cmake/StrataConfig.cmake
              ${STRATA_BINARY_DIR}/cmake/StrataConfigVersion.cmake
  DESTINATION ${STRATA_INSTALL_CMAKE_DIR})
