//===- HostTensor.h - small constant tensors folded at import ---*- C++ -*-===//
//
// Shape computations (Shape -> Gather -> Concat -> Reshape, as torch exports)
// are evaluated at import on these host-side tensors. Integers (and bool) are
// held as int64, floating types as double: exact for every value a shape
// computation produces.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_IMPORT_ONNX_HOSTTENSOR_H
#define WEFT_LIB_IMPORT_ONNX_HOSTTENSOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace weft {

/// Largest result (elements) the importer folds (GraphImporter::fold);
/// larger constant math is left to the runtime as ops on weft.constant
/// operands.
inline constexpr int64_t kMaxFoldElements = 1 << 16;

/// The most elements weft accepts in one tensor (2^40): an element count
/// times an element size then always fits int64, and no machine holds more.
inline constexpr int64_t kMaxElements = int64_t(1) << 40;

/// The element count of `dims`, or nullopt when a dim is negative or the
/// count exceeds kMaxElements (overflow-checked).
std::optional<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> dims);

struct HostTensor {
  int32_t dtype = onnx::TensorProto::INT64; ///< onnx::TensorProto::DataType
  llvm::SmallVector<int64_t> shape;
  std::vector<int64_t> ints;  ///< integer and bool dtypes
  std::vector<double> floats; ///< floating dtypes

  static HostTensor zeros(int32_t dtype, llvm::ArrayRef<int64_t> shape);
  static HostTensor fromInts(llvm::ArrayRef<int64_t> values,
                             llvm::ArrayRef<int64_t> shape);

  bool isFloat() const;
  int64_t size() const;
  double getDouble(int64_t k) const { return isFloat() ? floats[k] : ints[k]; }
  /// Element k as an integer; a float is truncated, saturating at the int64
  /// range (NaN gives 0).
  int64_t getInt(int64_t k) const {
    return isFloat() ? saturatingInt(floats[k]) : ints[k];
  }
  /// Stores v, converted to this dtype: integers truncate and saturate.
  void set(int64_t k, double v);
  /// Copies element j of `from` into element k: exact when both hold
  /// integers or both floats (an int64 beyond 2^53 survives a Concat).
  void copy(int64_t k, const HostTensor &from, int64_t j);
  static int64_t saturatingInt(double v);
  llvm::SmallVector<int64_t> toInts() const;
};

/// True for FLOAT, DOUBLE, FLOAT16, BFLOAT16.
bool isFloatDtype(int32_t dtype);

/// MLIR element type for an ONNX dtype; null for unsupported (string, complex).
mlir::Type toMLIRElementType(int32_t dtype, mlir::MLIRContext *ctx);

/// Reads a TensorProto's data: typed fields, raw_data, or external data (the
/// `location`, `offset`, `length` entries of the ONNX external-data spec,
/// with `location` relative to `modelDir`). Fails with `error` set for
/// unreadable external data, short data, or unsupported dtypes.
bool readTensorProto(const onnx::TensorProto &proto, HostTensor &out,
                     std::string &error, llvm::StringRef modelDir = "");

/// Replaces `proto`'s external-data reference by the bytes it points to.
bool inlineExternalData(onnx::TensorProto &proto, llvm::StringRef modelDir,
                        std::string &error);

/// The tensor as an MLIR constant attribute of its dtype.
mlir::DenseElementsAttr toElementsAttr(const HostTensor &t,
                                       mlir::MLIRContext *ctx);

/// `attr` as a host tensor (the inverse of toElementsAttr); nullopt for an
/// element type ONNX has no dtype for here.
std::optional<HostTensor> fromElementsAttr(mlir::DenseElementsAttr attr);

} // namespace weft

#endif // WEFT_LIB_IMPORT_ONNX_HOSTTENSOR_H
