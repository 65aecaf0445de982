# Resolves STRATA_ENABLE_ONNX (AUTO|ON|OFF) into STRATA_HAVE_ONNX: the ONNX
# importer (strata-translate --import-onnx, lib/Import/ONNX) is built when
# Debian's libonnx-dev and libprotobuf-dev are found. Only onnx-ml.pb.h ships,
# so the imported `onnx_proto` target carries ONNX_ML=1 and ONNX_NAMESPACE=onnx.
set(STRATA_ENABLE_ONNX AUTO CACHE STRING
    "Build the ONNX importer: AUTO (when libonnx-dev is found), ON or OFF")
set_property(CACHE STRATA_ENABLE_ONNX PROPERTY STRINGS AUTO ON OFF)

set(STRATA_HAVE_ONNX OFF)
if(NOT STRATA_ENABLE_ONNX STREQUAL "OFF")
  # ONNXTargets.cmake links protobuf::libprotobuf: find Protobuf first.
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
  if(Protobuf_FOUND AND ONNX_FOUND AND TARGET onnx_proto)
    set(STRATA_HAVE_ONNX ON)
    message(STATUS "ONNX importer: enabled (ONNX ${ONNX_VERSION}, protobuf "
                   "${Protobuf_VERSION})")
  elseif(STRATA_ENABLE_ONNX STREQUAL "ON")
    message(FATAL_ERROR "STRATA_ENABLE_ONNX=ON but libonnx-dev/libprotobuf-dev "
                        "were not found")
  else()
    message(STATUS "ONNX importer: disabled (libonnx-dev or libprotobuf-dev "
                   "not found)")
  endif()
else()
  message(STATUS "ONNX importer: disabled (STRATA_ENABLE_ONNX=OFF)")
endif()
