//===- WeftOps.h - weft ops -------------------------------------*- C++ -*-===//
#ifndef WEFT_DIALECT_WEFT_IR_WEFTOPS_H
#define WEFT_DIALECT_WEFT_IR_WEFTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "weft/Dialect/Weft/IR/ShapeUtils.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftInterfaces.h"

#define GET_OP_CLASSES
#include "weft/Dialect/Weft/IR/WeftOps.h.inc"

namespace weft {
/// For ops that update state in place (optimizer steps), the operand whose
/// bytes result `result` reuses; std::nullopt for every other op.
std::optional<unsigned> inPlaceOperand(mlir::Operation *op, unsigned result);

/// For a batch-norm running statistic (a `weft.state` argument, or the
/// updated statistic of a training batch_norm, through any chain of them),
/// the state argument it updates; null otherwise.
mlir::BlockArgument batchNormStateRoot(mlir::Value stats);
} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_WEFTOPS_H
