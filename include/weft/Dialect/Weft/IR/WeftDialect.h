//===- WeftDialect.h - the weft dialect -------------------------*- C++ -*-===//
#ifndef WEFT_DIALECT_WEFT_IR_WEFTDIALECT_H
#define WEFT_DIALECT_WEFT_IR_WEFTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "weft/Dialect/Weft/IR/WeftDialect.h.inc"

namespace weft {
/// Function-argument attribute names: which model input, parameter or state
/// (ONNX initializer) an argument of the model's `func.func` stands for.
inline constexpr llvm::StringLiteral kInputAttr = "weft.input";
inline constexpr llvm::StringLiteral kParamAttr = "weft.param";
inline constexpr llvm::StringLiteral kStateAttr = "weft.state";
/// Optimizer state (Adam moments, momentum buffers): zero-initialised.
inline constexpr llvm::StringLiteral kOptimizerStateAttr = "weft.optimizer_state";
/// On ops a pass created: "backward" (weft-autodiff) or "optimizer".
inline constexpr llvm::StringLiteral kPhaseAttr = "weft.phase";
} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_WEFTDIALECT_H
