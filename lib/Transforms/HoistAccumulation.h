//===- HoistAccumulation.h - micro-batch sums by their terms --*- C++ -*-===//
//
// Shared by weft-data-parallel and weft-hoist-accumulation.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_LIB_TRANSFORMS_HOISTACCUMULATION_H
#define WEFT_LIB_TRANSFORMS_HOISTACCUMULATION_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SetVector.h"

namespace weft {

/// The operand of an optimizer update (weft.sgd, weft.adamw) that is its
/// parameter's gradient.
constexpr unsigned kGradOperand = 1;

/// Whether `op` is an optimizer update (weft.sgd, weft.adamw).
bool isOptimizerStep(mlir::Operation *op);

/// weft-accumulate-microbatches appends each gradient's sum over the M
/// micro-batches (adds, and the 1/M scale when the backward was not seeded
/// with it) after the last micro-batch's whole step. Moves each op of those
/// sums that `updates` read (adds and muls with no micro-batch of their
/// own) up to right after its latest operand, constants aside, where it
/// joins that operand's task: a gradient is complete as soon as its last
/// contribution is, and each micro-batch's weight gradient is added to the
/// running sum as soon as its GEMM has written it, instead of all of them
/// waiting for the end of the micro-batch's backward (which held the whole
/// stage's gradients twice at its peak). Returns the ops moved, each after
/// the ops whose results it reads. Linear in the block (HoistOrder).
llvm::SetVector<mlir::Operation *>
hoistAccumulation(llvm::ArrayRef<mlir::Operation *> updates);

} // namespace weft

#endif // WEFT_LIB_TRANSFORMS_HOISTACCUMULATION_H
