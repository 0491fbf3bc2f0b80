//===- FoldLayerNormGradAdd.cpp - weft-fold-layer-norm-grad-add -----------===//
//
// A pre-LN transformer reads each residual-stream value twice: its
// LayerNorm and the next residual add. The backward then sums the two
// gradients, the LayerNorm's input gradient and the residual stream's,
// with an add that reads both and writes a third activation-sized tensor
// per LayerNorm. The LayerNorm's gradient kernel writes its input gradient
// anyway; adding the other one in before it rounds (`accumulate`) leaves
// one read where a write, two reads and a write were (Megatron-LM's and
// Transformer Engine's fused residual backward).
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Dominance.h"

namespace weft {
#define GEN_PASS_DEF_FOLDLAYERNORMGRADADD
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Whether every reader of `op`'s results other than `except` comes after
/// `point`: `op` may then move to just before `point`.
bool readAfter(Operation *op, Operation *point, Operation *except) {
  for (Operation *user : op->getUsers())
    if (user != except &&
        (user->getBlock() != point->getBlock() || user->isBeforeInBlock(point)))
      return false;
  return true;
}

/// `add(dx, other)` of the LayerNorm gradient's only reader, folded into
/// it; false when the add broadcasts or `other` cannot come first.
bool fold(LayerNormGradOp grad, DominanceInfo &dominance) {
  Value dx = grad.getInputGrad();
  if (grad.getAccumulate() || !dx.hasOneUse())
    return false;
  auto add = dyn_cast<AddOp>(*dx.getUsers().begin());
  if (!add || add.getType() != dx.getType())
    return false;
  Value other = add.getLhs() == dx ? add.getRhs() : add.getLhs();
  if (other.getType() != dx.getType())
    return false;
  if (!dominance.properlyDominates(other, grad)) {
    // The residual gradient is computed after the LayerNorm's gradient:
    // the latter moves down to the add, if nothing reads it before.
    if (!readAfter(grad, add, add))
      return false;
    grad->moveBefore(add);
  }
  grad.getAccumulateMutable().assign(other);
  add.replaceAllUsesWith(dx);
  add.erase();
  return true;
}

struct FoldLayerNormGradAddPass
    : weft::impl::FoldLayerNormGradAddBase<FoldLayerNormGradAddPass> {
  void runOnOperation() override {
    SmallVector<LayerNormGradOp> grads;
    getOperation().walk([&](LayerNormGradOp op) { grads.push_back(op); });
    DominanceInfo dominance(getOperation());
    for (LayerNormGradOp grad : grads)
      fold(grad, dominance);
  }
};

} // namespace
