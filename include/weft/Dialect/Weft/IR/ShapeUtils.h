//===- ShapeUtils.h - shape and size helpers for weft ops -------*- C++ -*-===//
//
// Shape and size helpers shared by op verification, the cost model and the
// importer (broadcasting follows the ONNX specification, "Broadcasting in
// ONNX"). Kernel ops' type rules are their kernels' (KernelContract.h).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_SHAPEUTILS_H
#define WEFT_DIALECT_WEFT_IR_SHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
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

/// Checks that `axes` are sorted, unique and within [0, rank).
llvm::LogicalResult verifyAxes(mlir::Operation *op,
                               llvm::ArrayRef<int64_t> axes, int64_t rank);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_SHAPEUTILS_H
