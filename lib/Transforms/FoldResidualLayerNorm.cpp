//===- FoldResidualLayerNorm.cpp - weft-fold-residual-layer-norm ----------===//
//
// A pre-LN transformer's residual add writes the residual stream, and the
// next LayerNorm reads it straight back. One weft.add_layer_norm writes
// the sum and normalises it from registers: the forward half of the fused
// residual that weft-fold-layer-norm-grad-add is the backward half of.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace weft {
#define GEN_PASS_DEF_FOLDRESIDUALLAYERNORM
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The LayerNorm that normalises `add`'s sum, in its block and with its
/// bookkeeping (its `weft.task`: a recomputed clone
/// fuses with a recomputed add only); null when none.
LayerNormOp normOf(AddOp add) {
  Value sum = add.getResult();
  for (Operation *user : add->getUsers()) {
    auto norm = dyn_cast<LayerNormOp>(user);
    if (norm && norm.getInput() == sum && norm.getScale() != sum &&
        norm.getBias() != sum && norm->getBlock() == add->getBlock() &&
        norm->getDiscardableAttrDictionary() ==
            add->getDiscardableAttrDictionary())
      return norm;
  }
  return {};
}

/// Where the fused op can go: the add's place when the LayerNorm's scale
/// and bias exist there, else the LayerNorm's when every other reader of
/// the sum comes after it; null when neither.
Operation *placeOf(AddOp add, LayerNormOp norm, DominanceInfo &dominance) {
  auto before = [&](Operation *op) {
    return llvm::all_of(
        ValueRange{norm.getScale(), norm.getBias()},
        [&](Value v) { return !v || dominance.properlyDominates(v, op); });
  };
  if (before(add))
    return add;
  for (Operation *user : add->getUsers())
    if (user != norm && !dominance.properlyDominates(norm, user))
      return nullptr;
  return norm;
}

bool fold(AddOp add, DominanceInfo &dominance) {
  Type type = add.getType();
  if (add.getLhs().getType() != type || add.getRhs().getType() != type)
    return false;
  LayerNormOp norm = normOf(add);
  Operation *place = norm ? placeOf(add, norm, dominance) : nullptr;
  if (!place)
    return false;
  OpBuilder b(place);
  auto fused = AddLayerNormOp::create(
      b, norm.getLoc(), add.getLhs(), add.getRhs(), norm.getScale(),
      norm.getBias(), norm.getAxisAttr(), norm.getEpsilonAttr());
  fused->setDiscardableAttrs(norm->getDiscardableAttrDictionary());
  norm.getOutput().replaceAllUsesWith(fused.getOutput());
  norm.getMean().replaceAllUsesWith(fused.getMean());
  norm.getInvStdDev().replaceAllUsesWith(fused.getInvStdDev());
  norm.erase();
  add.getResult().replaceAllUsesWith(fused.getSum());
  add.erase();
  return true;
}

struct FoldResidualLayerNormPass
    : weft::impl::FoldResidualLayerNormBase<FoldResidualLayerNormPass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp op) { adds.push_back(op); });
    DominanceInfo dominance(getOperation());
    for (AddOp add : adds)
      fold(add, dominance);
  }
};

} // namespace
