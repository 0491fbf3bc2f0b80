# The ONNX C++ library weft links: the pinned release scripts/build-onnx.sh
# builds into .deps/ (its version and checksum are there), never the system's
# (Debian 12's libonnx 1.12 knows opsets up to 17). Included by the top-level
# project and by the runtime's standalone one.
set(WEFT_ONNX_VERSION 1.23.2)
get_filename_component(weft_onnx_prefix
  "${CMAKE_CURRENT_LIST_DIR}/../.deps/onnx-${WEFT_ONNX_VERSION}" ABSOLUTE)
find_package(Protobuf REQUIRED)
find_package(ONNX ${WEFT_ONNX_VERSION} EXACT CONFIG
  PATHS "${weft_onnx_prefix}" NO_DEFAULT_PATH)
if(NOT ONNX_FOUND)
  message(FATAL_ERROR "weft: ONNX ${WEFT_ONNX_VERSION} is not in "
    "${weft_onnx_prefix}: run scripts/install-deps.sh (or scripts/build-onnx.sh)")
endif()
