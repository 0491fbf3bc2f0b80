//===- WeftOps.h - weft ops -------------------------------------*- C++ -*-===//
#ifndef WEFT_DIALECT_WEFT_IR_WEFTOPS_H
#define WEFT_DIALECT_WEFT_IR_WEFTOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "weft/Dialect/Weft/IR/KernelContract.h"
#include "weft/Dialect/Weft/IR/OpRecords.h"
#include "weft/Dialect/Weft/IR/ShapeUtils.h"
#include "weft/Dialect/Weft/IR/Task.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftInterfaces.h"

#define GET_TYPEDEF_CLASSES
#include "weft/Dialect/Weft/IR/WeftTypes.h.inc"

#define GET_OP_CLASSES
#include "weft/Dialect/Weft/IR/WeftOps.h.inc"

namespace weft {
/// For ops whose result reuses an operand's bytes (in-place optimizer steps
/// and batch-norm statistics, wait_recv's view of its buffer), the operand
/// whose bytes result `result` reuses; std::nullopt for every other op.
std::optional<unsigned> inPlaceOperand(mlir::Operation *op, unsigned result);

/// Marks `add`, a running sum plus a share (of the micro-batches, or of
/// the ZeRO pieces they reduce-scatter), to add in place into the running
/// sum's bytes (kAccumulateAttr) where they are its own to overwrite:
/// `add` is the sum's only reader, the sum is of the result's type, and its
/// bytes are no argument's or constant's, every value along its views and
/// in-place updates read only by the next one.
void accumulateInPlaceIfOwned(AddOp add);

/// An optimizer update's (weft.adamw, weft.sgd) state operands and the
/// results that update them: the moments or the momentum buffer, then the
/// mixed-precision master copy. Not the parameter, its gradient or the loss
/// scaler, which every update reads.
llvm::SmallVector<std::pair<mlir::Value, mlir::Value>>
optimizerState(mlir::Operation *update);

/// For a batch-norm running statistic (a `weft.state` argument, or the
/// updated statistic of a training batch_norm, through any chain of them),
/// the state argument it updates; null otherwise.
mlir::BlockArgument batchNormStateRoot(mlir::Value stats);

/// Ops whose result is their operand's bytes (no work, no buffer of its
/// own): a reshape, and Megatron's f in the forward (Ops.def's View).
inline bool isView(mlir::Operation *op) {
  const ops::OpRecord *r = opRecord(op);
  return r && r->isView();
}

/// The value whose bytes `v` views (through reshapes and other views), or
/// `v` itself.
inline mlir::Value viewedValue(mlir::Value v) {
  while (mlir::Operation *def = v.getDefiningOp()) {
    if (!isView(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// The operand whose bytes result `result` of `op` is: a view's input, or
/// an in-place update's operand (inPlaceOperand); nullopt for a result
/// with bytes of its own. The memory plan's aliasing rule.
inline std::optional<unsigned> aliasedOperand(mlir::Operation *op,
                                              unsigned result) {
  return isView(op) ? std::optional<unsigned>(0) : inPlaceOperand(op, result);
}

/// Whether a `shard` collective's result is read by a
/// `weft.wait_collective`, which makes the collective a post (completed at
/// the wait) rather than a blocking op.
inline bool isWaitedFor(mlir::Operation *collective) {
  // Only as the posted operand: a wait also reads the collective's input
  // (to keep it live), whose producer is no post.
  return llvm::any_of(collective->getUses(), [](mlir::OpOperand &use) {
    return llvm::isa<WaitCollectiveOp>(use.getOwner()) &&
           use.getOperandNumber() == 0;
  });
}

/// The micro-batch whose work an op is, for the memory plan's slots and
/// the plan's task bodies: its task's micro-batch, or, for a micro-batch
/// sum no pass placed in a task (a `weft.accumulate` add on one pipeline
/// stage), the micro-batch of the share it adds.
inline std::optional<int64_t> microBatchWorkedOn(mlir::Operation *op) {
  if (std::optional<int64_t> mb = microBatchOf(op))
    return mb;
  if (op->hasAttr(kAccumulateAttr) && op->getNumOperands() == 2)
    if (mlir::Operation *share = op->getOperand(1).getDefiningOp())
      return microBatchOf(share);
  return std::nullopt;
}

/// weft.attention's `layout` for operands [B, S, H, D], and for q, k and v
/// one packed [B, S, 3, H, D] tensor (WeftAttentionOps.td); absent, they
/// are [.., S, D].
inline constexpr llvm::StringLiteral kAttentionBshd = "bshd";
inline constexpr llvm::StringLiteral kAttentionBs3hd = "bs3hd";

/// Whether `op` draws a dropout mask keyed by its rng_id: a weft.dropout,
/// or a weft.attention that absorbed one (weft-fuse-attention). Masks are
/// numbered over these ops in forward order per micro-batch
/// (docs/plan-format.md).
inline bool drawsDropoutMask(mlir::Operation *op) {
  if (auto attention = llvm::dyn_cast<AttentionOp>(op))
    return static_cast<bool>(attention.getDropoutRatio());
  return llvm::isa<DropoutOp>(op);
}
} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_WEFTOPS_H
