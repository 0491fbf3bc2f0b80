//===- ShapeUtils.h - shape and size helpers for weft ops -------*- C++ -*-===//
//
// Shape rules shared by op verification, type inference and the importer.
// Rules follow the ONNX specification (opset 17), "Broadcasting in ONNX".
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_SHAPEUTILS_H
#define WEFT_DIALECT_WEFT_IR_SHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace weft {

/// Number of elements of a static shaped type.
int64_t numElements(mlir::Type type);

/// Storage bytes of a static shaped type: elements x ceil(bit width / 8);
/// 0 for a type that holds no data (`!weft.request`).
int64_t byteSize(mlir::Type type);

/// Numpy multidirectional broadcast of two shapes; std::nullopt when they
/// do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Result type of an elementwise op on `lhs`, `rhs`: broadcast shape, element
/// type `elementType` (or lhs's when null). Emits an error at `loc` on failure.
llvm::LogicalResult inferBroadcastType(std::optional<mlir::Location> loc,
                                       mlir::Type lhs, mlir::Type rhs,
                                       mlir::Type elementType,
                                       llvm::SmallVectorImpl<mlir::Type> &out);

/// Result type of a reduction over sorted non-negative `axes`.
llvm::LogicalResult inferReduceType(std::optional<mlir::Location> loc,
                                    mlir::Type input,
                                    llvm::ArrayRef<int64_t> axes, bool keepdims,
                                    llvm::SmallVectorImpl<mlir::Type> &out);

/// Checks that `axes` are sorted, unique and within [0, rank).
llvm::LogicalResult verifyAxes(mlir::Operation *op,
                               llvm::ArrayRef<int64_t> axes, int64_t rank);

/// Output extent of a pooling/convolution window along one dim (ONNX Conv,
/// MaxPool): floor or ceil((in + padBegin + padEnd - ((k-1)*d + 1)) / s) + 1.
int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_SHAPEUTILS_H
