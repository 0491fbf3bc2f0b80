//===- FoldAttentionTranspose.cpp - weft-fold-attention-transpose ---------===//
//
// Exported attention splits heads as reshape [B, S, H, D] then transpose
// to [B, H, S, D], and merges them with the inverse transpose: copies of
// q, k, v and the output forward, and of their gradients backward. The
// fused attention reads and writes strided rows, so it takes the
// reshapes' [B, S, H, D] tensors themselves (layout "bshd") and the
// transposes go. Autodiff runs after this pass and gives the gradient op
// the same layout.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_FOLDATTENTIONTRANSPOSE
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The head swap [B, S, H, D] <-> [B, H, S, D]; its own inverse.
constexpr int64_t kSwap[] = {0, 2, 1, 3};

bool isHeadSwap(Operation *op) {
  auto transpose = dyn_cast_or_null<TransposeOp>(op);
  return transpose && transpose.getPerm() == ArrayRef<int64_t>(kSwap);
}

/// `attention`'s q, k, v as [B, S, H, D] (the head swaps' inputs), or
/// nothing when one of them is not a head swap, or the op already has a
/// layout or a backward reading its stats.
std::optional<SmallVector<Value, 3>> bshdOperands(AttentionOp attention) {
  // With a bias the op keeps [B, H, S, D] operands (its layouts are for
  // the projections' q, k and v, which a bias does not change, but only
  // those without one are folded).
  if (attention.getLayout() || !attention.getStats().use_empty() ||
      attention.getBias())
    return std::nullopt;
  SmallVector<Value, 3> operands;
  for (Value operand : attention->getOperands()) {
    Operation *def = operand.getDefiningOp();
    if (!isHeadSwap(def))
      return std::nullopt;
    operands.push_back(def->getOperand(0));
  }
  return operands;
}

void fold(AttentionOp attention, ValueRange operands) {
  OpBuilder b(attention);
  Location loc = attention.getLoc();
  // Every attribute carries over (scale, causal, dropout, a tensor-parallel
  // shard): the mask is the probabilities' in either layout.
  NamedAttrList attrs(attention->getAttrDictionary());
  attrs.set(attention.getLayoutAttrName(), b.getStringAttr(kAttentionBshd));
  auto folded = AttentionOp::create(b, loc, operands, attrs.getAttrs());
  Value output = folded.getOutput();
  // Readers that swap the heads back read the output itself; any other
  // reader, one swap back to [B, H, S, Dv].
  Value heads;
  for (OpOperand &use :
       llvm::make_early_inc_range(attention.getOutput().getUses())) {
    Operation *user = use.getOwner();
    if (isHeadSwap(user)) {
      user->getResult(0).replaceAllUsesWith(output);
      user->erase();
      continue;
    }
    if (!heads)
      heads = TransposeOp::create(b, loc, output, kSwap);
    use.set(heads);
  }
  attention.getStats().replaceAllUsesWith(folded.getStats());
  SmallVector<Operation *, 3> swaps;
  for (Value operand : attention->getOperands())
    swaps.push_back(operand.getDefiningOp());
  attention.erase();
  for (Operation *swap : swaps)
    if (swap->use_empty())
      swap->erase();
}

struct FoldAttentionTransposePass
    : weft::impl::FoldAttentionTransposeBase<FoldAttentionTransposePass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp op) { attentions.push_back(op); });
    for (AttentionOp attention : attentions)
      if (std::optional<SmallVector<Value, 3>> operands =
              bshdOperands(attention))
        fold(attention, *operands);
  }
};

} // namespace
