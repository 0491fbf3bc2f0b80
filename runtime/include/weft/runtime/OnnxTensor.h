//===- OnnxTensor.h - ONNX TensorProto <-> raw bytes ------------*- C++ -*-===//
//
// Weights, data files and dumped outputs are ONNX TensorProto messages (the
// format of the ONNX backend test data). The runtime reads them into raw
// little-endian element bytes, the layout of its arena.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_ONNXTENSOR_H
#define WEFT_RUNTIME_ONNXTENSOR_H

#include "weft/runtime/Tensor.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace weft::rt {

/// The runtime dtype of an ONNX TensorProto data type; throws Error for
/// types the runtime does not hold (string, complex).
DType dtypeOfONNX(int32_t onnxType, const std::string &what);
int32_t onnxTypeOf(DType dtype);

/// Raw element bytes of `proto`: raw_data, typed fields, or external data
/// (location relative to `modelDir`). `what` names the tensor in errors.
std::string tensorBytes(const onnx::TensorProto &proto,
                        const std::string &modelDir, const std::string &what);

/// Reads one serialized TensorProto file; throws Error naming the file.
onnx::TensorProto readTensorFile(const std::string &path);

/// A TensorProto named `name` holding `bytes` (dtype, shape) as raw_data.
onnx::TensorProto makeTensorProto(const std::string &name, DType dtype,
                                  const std::vector<int64_t> &shape,
                                  std::string bytes);

/// Writes `bytes` (dtype, shape) as a TensorProto named `name` to `path`,
/// creating its directory; atomically (Files.h).
void writeTensorFile(const std::string &path, const std::string &name,
                     DType dtype, const std::vector<int64_t> &shape,
                     const std::string &bytes);

} // namespace weft::rt

#endif // WEFT_RUNTIME_ONNXTENSOR_H
