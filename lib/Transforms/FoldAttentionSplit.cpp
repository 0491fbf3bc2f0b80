//===- FoldAttentionSplit.cpp - weft-fold-attention-split -----------------===//
//
// A transformer's QKV projection makes one [B, S, 3 H D] tensor that the
// model splits into q, k and v, each reshaped to [B, S, H, D] for the
// attention (after weft-fold-attention-transpose): the split copies all
// three out forward, and its gradient concatenates dq, dk and dv back
// backward. The fused attention reads rows at any stride and offset, so
// it takes the projection itself as one packed [B, S, 3, H, D] value
// (layout "bs3hd", Transformer Engine's name): the split and the concat
// go. Autodiff runs after this pass and gives the gradient op the same
// layout, whose one result is the packed gradient.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_FOLDATTENTIONSPLIT
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The split whose results 0, 1 and 2 `attention` reads as q, k and v,
/// each through a reshape of it to [B, S, H, D]: three equal pieces of the
/// last dim of a [B, S, 3 H D] tensor. Null when the attention is not
/// so fed, has no "bshd" layout, or already has a backward (stats read).
SplitOp packedSplit(AttentionOp attention) {
  if (attention.getLayout() != kAttentionBshd ||
      !attention.getStats().use_empty() || attention.getBias())
    return {};
  SplitOp split;
  for (auto [part, operand] : llvm::enumerate(attention->getOperands())) {
    auto reshape = operand.getDefiningOp<ReshapeOp>();
    auto piece = reshape ? dyn_cast<OpResult>(reshape.getInput()) : OpResult();
    auto owner = piece ? dyn_cast<SplitOp>(piece.getOwner()) : SplitOp();
    if (!owner || piece.getResultNumber() != part || (split && owner != split))
      return {};
    split = owner;
  }
  auto input = cast<RankedTensorType>(split.getInput().getType());
  auto q = cast<RankedTensorType>(attention.getQ().getType());
  if (split->getNumResults() != 3 || input.getRank() != 3 ||
      split.getAxis() != 2 || q.getDimSize(0) != input.getDimSize(0) ||
      q.getDimSize(1) != input.getDimSize(1))
    return {};
  // Equal pieces: q, k and v of one [B, S, H, D] type (the verifier's
  // shape checks hold for the packed form then).
  for (Value operand : attention->getOperands())
    if (operand.getType() != q)
      return {};
  return split;
}

void fold(AttentionOp attention, SplitOp split) {
  OpBuilder b(attention);
  Location loc = attention.getLoc();
  ArrayRef<int64_t> q =
      cast<RankedTensorType>(attention.getQ().getType()).getShape();
  // [B, S, 3 H D] -> [B, S, 3, H, D]: a view, no copy.
  Value packed = ReshapeOp::create(
      b, loc, split.getInput(), ArrayRef<int64_t>{q[0], q[1], 3, q[2], q[3]});
  // Every attribute carries over (scale, causal, dropout, a shard): the
  // mask is the probabilities' in any layout.
  NamedAttrList attrs(attention->getAttrDictionary());
  attrs.set(attention.getLayoutAttrName(), b.getStringAttr(kAttentionBs3hd));
  auto folded = AttentionOp::create(b, loc, ValueRange{packed, packed, packed},
                                    attrs.getAttrs());
  attention.getOutput().replaceAllUsesWith(folded.getOutput());
  attention.getStats().replaceAllUsesWith(folded.getStats());
  SmallVector<Operation *, 3> reshapes;
  for (Value operand : attention->getOperands())
    reshapes.push_back(operand.getDefiningOp());
  attention.erase();
  // Other readers of q, k or v keep their reshape and the split.
  for (Operation *reshape : reshapes)
    if (reshape->use_empty())
      reshape->erase();
  if (split->use_empty())
    split->erase();
}

struct FoldAttentionSplitPass
    : weft::impl::FoldAttentionSplitBase<FoldAttentionSplitPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp op) { attentions.push_back(op); });
    for (AttentionOp attention : attentions)
      if (SplitOp split = packedSplit(attention))
        fold(attention, split);
  }
};

} // namespace
