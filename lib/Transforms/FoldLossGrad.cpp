//===- FoldLossGrad.cpp - weft-fold-loss-grad -----------------------------===//
//
// A language model's loss reads its [N, C] scores (the logits over the
// vocabulary) once for their log-sum-exp, and its gradient reads them again
// and writes as many bytes beside them. When the gradient's seed is known
// as the forward runs (it is: 1, a micro-batch's share, or the loss scale),
// one kernel can do both and write the gradient over the scores
// (weft.softmax_cross_entropy_and_grad), as Megatron-LM's and
// Liger-Kernel's fused cross-entropy do: one read of the scores fewer, and
// the scores and their gradient never held at once.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_FOLDLOSSGRAD
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// How many ops deep the seed's producers may be moved: f16's seed is the
/// loss scale sliced from its state and reshaped.
constexpr int kSeedDepth = 4;

/// Whether the bytes `v` reads (through views) are an op's own, read by
/// nothing but views of them and `readers`: then a reader may overwrite
/// them. Not a parameter's, an input's or a constant's, nor bytes an op
/// updates in place or received.
bool onlyReadBy(Value v, ArrayRef<Operation *> readers) {
  v = viewedValue(v);
  auto result = dyn_cast<OpResult>(v);
  if (!result || isa<ConstantOp>(result.getOwner()) ||
      inPlaceOperand(result.getOwner(), result.getResultNumber()))
    return false;
  SmallVector<Value> bytes{v};
  while (!bytes.empty()) {
    Value x = bytes.pop_back_val();
    for (OpOperand &use : x.getUses()) {
      Operation *user = use.getOwner();
      if (llvm::is_contained(readers, user))
        continue;
      if (!isView(user) || use.getOperandNumber() != 0)
        return false;
      bytes.push_back(user->getResult(0));
    }
  }
  return true;
}

/// Collects, operands first, the ops after `point` that make `v`: pure ops
/// of `point`'s block at most `depth` deep. False when `v` cannot be made
/// before `point`.
bool producersAfter(Value v, Operation *point, int depth,
                    llvm::SetVector<Operation *> &ops) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return cast<BlockArgument>(v).getOwner() == point->getBlock();
  if (def == point || def->getBlock() != point->getBlock())
    return false;
  if (def->isBeforeInBlock(point) || ops.contains(def))
    return true;
  if (depth == 0 || !isPure(def) || def->getNumRegions() != 0)
    return false;
  for (Value operand : def->getOperands())
    if (!producersAfter(operand, point, depth - 1, ops))
      return false;
  ops.insert(def);
  return true;
}

/// Sets `op`'s task kind to `like`'s: it now runs with it.
void markLike(Operation *op, Operation *like) {
  setTaskKind(op, taskKindOf(like));
}

/// softmax_cross_entropy_grad of a softmax_cross_entropy's log-sum-exp:
/// one softmax_cross_entropy_and_grad at the forward's place.
bool fold(SoftmaxCrossEntropyGradOp grad) {
  Value lse = grad.getLogSumExp();
  if (!lse || grad.getGradType() || !lse.hasOneUse())
    return false;
  auto forward = lse.getDefiningOp<SoftmaxCrossEntropyOp>();
  if (!forward || !forward.getLogSumExp() ||
      forward->getBlock() != grad->getBlock() ||
      forward.getScores() != grad.getInput() ||
      forward.getLabels() != grad.getLabels() ||
      forward.getWeights() != grad.getWeights() ||
      forward.getReduction() != grad.getReduction() ||
      forward.getIgnoreIndex() != grad.getIgnoreIndex() ||
      grad.getGrad().getType() != forward.getLoss().getType() ||
      stageOf(forward) != stageOf(grad) ||
      microBatchOf(forward) != microBatchOf(grad))
    return false;
  if (!onlyReadBy(forward.getScores(), {forward, grad}))
    return false;
  llvm::SetVector<Operation *> seed;
  if (!producersAfter(grad.getGrad(), forward, kSeedDepth, seed))
    return false;
  for (Operation *op : seed) {
    op->moveBefore(forward);
    markLike(op, forward);
  }
  OpBuilder b(forward);
  auto fused = SoftmaxCrossEntropyAndGradOp::create(
      b, forward.getLoc(), forward.getScores(), forward.getLabels(),
      grad.getGrad(), forward.getWeights(), forward.getReductionAttr(),
      forward.getIgnoreIndexAttr(), forward.getLogProbTypeAttr());
  fused->setDiscardableAttrs(forward->getDiscardableAttrDictionary());
  forward.getLoss().replaceAllUsesWith(fused.getLoss());
  grad.getResult().replaceAllUsesWith(fused.getScoresGrad());
  grad.erase();
  forward.erase();
  return true;
}

struct FoldLossGradPass : weft::impl::FoldLossGradBase<FoldLossGradPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxCrossEntropyGradOp> grads;
    getOperation().walk(
        [&](SoftmaxCrossEntropyGradOp grad) { grads.push_back(grad); });
    for (SoftmaxCrossEntropyGradOp grad : grads)
      fold(grad);
  }
};

} // namespace
