//===- FuseScaleMaskSoftmax.cpp - weft-fuse-scale-mask-softmax ------------===//
//
// A transformer's core attention divides the scores by sqrt(d), masks the
// future with a fill value and takes the softmax: three passes over the
// [b, a, s, s] scores, each writing what the next reads back; its backward
// mirrors them (the softmax's gradient, the mask's, the quotient's). Megatron-
// LM runs each as one kernel (FusedScaleMaskSoftmax and its backward); so
// does weft: weft.scale_mask_softmax and weft.scale_mask_softmax_grad, whose
// kernels compute what the three ops computed, each step rounded as they
// rounded, so the bits are the same (ScaleMaskSoftmaxIsItsParts). Runs
// after weft-checkpoint, so a recomputed core attention fuses too.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

namespace weft {
#define GEN_PASS_DEF_FUSESCALEMASKSOFTMAX
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The value of a splat float literal, if `v` is one. Exact: a weft
/// float is f16, bf16, f32 or f64, each of which a double holds.
std::optional<double> literal(Value v) {
  DenseFPElementsAttr values;
  if (!matchPattern(v, m_Constant(&values)) || !values.isSplat())
    return std::nullopt;
  return values.getSplatValue<APFloat>().convertToDouble();
}

/// Whether `mask` is [..., s_q, s_k] with leading dims 1 over `scores`'
/// last two dims (the kernels' form: a mask shared by batch and heads).
bool isRowMask(Value mask, Value scores) {
  auto m = cast<RankedTensorType>(mask.getType());
  auto x = cast<RankedTensorType>(scores.getType());
  if (!m.getElementType().isInteger(1) || m.getRank() < 2 ||
      m.getRank() > x.getRank() || !m.hasStaticShape() ||
      m.getShape().take_back(2) != x.getShape().take_back(2))
    return false;
  return llvm::all_of(m.getShape().drop_back(2),
                      [](int64_t d) { return d == 1; });
}

/// The op defining `v` when it is an `Op` that nothing else reads and that
/// has `user`'s bookkeeping (stage, micro-batch, `weft.task`).
template <typename Op> Op soleDef(Value v, Operation *user) {
  auto op = v.getDefiningOp<Op>();
  if (!op || !v.hasOneUse() || op->getBlock() != user->getBlock() ||
      op->getDiscardableAttrDictionary() !=
          user->getDiscardableAttrDictionary())
    return {};
  return op;
}

bool lastAxis(int64_t axis, Value v) {
  return axis == cast<RankedTensorType>(v.getType()).getRank() - 1;
}

/// Puts `fused` (built at `last`'s place) in the place of the chain
/// `first`, `middle`, `last`: it takes `last`'s bookkeeping and readers,
/// and the chain, read by nothing else, goes.
void replaceChain(Operation *fused, Operation *first, Operation *middle,
                  Operation *last) {
  fused->setDiscardableAttrs(last->getDiscardableAttrDictionary());
  last->replaceAllUsesWith(fused);
  last->erase();
  middle->erase();
  first->erase();
}

/// softmax(where(mask, fill, x / divisor)) along the last dim, one type
/// throughout, the fill a scalar (any value: an operand, as a plan's
/// attributes hold no -inf): one scale_mask_softmax at the softmax's place.
bool fuseForward(SoftmaxOp softmax) {
  auto where = soleDef<WhereOp>(softmax.getInput(), softmax);
  if (!lastAxis(softmax.getAxis(), softmax.getInput()) || !where)
    return false;
  auto div = soleDef<DivOp>(where.getY(), softmax);
  auto scalar = RankedTensorType::get({}, softmax.getType().getElementType());
  if (!div || where.getX().getType() != scalar ||
      div.getLhs().getType() != softmax.getType() ||
      !isRowMask(where.getCondition(), softmax.getInput()))
    return false;
  std::optional<double> divisor = literal(div.getRhs());
  if (!divisor || *divisor == 0)
    return false;
  OpBuilder b(softmax);
  auto fused = ScaleMaskSoftmaxOp::create(b, softmax.getLoc(), div.getLhs(),
                                          where.getCondition(), where.getX(),
                                          b.getF64FloatAttr(*divisor));
  replaceChain(fused, div, where, softmax);
  return true;
}

/// where(mask, 0, softmax_grad(y, dy)) / divisor along the last dim: one
/// scale_mask_softmax_grad at the div's place.
bool fuseBackward(DivOp div) {
  std::optional<double> divisor = literal(div.getRhs());
  auto where = soleDef<WhereOp>(div.getLhs(), div);
  if (!divisor || *divisor == 0 || !where ||
      div.getType() != div.getLhs().getType())
    return false;
  auto grad = soleDef<SoftmaxGradOp>(where.getY(), div);
  std::optional<double> zero = literal(where.getX());
  if (!grad || !zero || *zero != 0 || grad.getType() != div.getType() ||
      !lastAxis(grad.getAxis(), grad.getOutput()) ||
      !isRowMask(where.getCondition(), grad.getOutput()))
    return false;
  OpBuilder b(div);
  auto fused = ScaleMaskSoftmaxGradOp::create(
      b, div.getLoc(), grad.getOutput(), grad.getGrad(), where.getCondition(),
      b.getF64FloatAttr(*divisor));
  replaceChain(fused, grad, where, div);
  return true;
}

struct FuseScaleMaskSoftmaxPass
    : weft::impl::FuseScaleMaskSoftmaxBase<FuseScaleMaskSoftmaxPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    SmallVector<DivOp> divs;
    getOperation().walk([&](Operation *op) {
      if (auto softmax = dyn_cast<SoftmaxOp>(op))
        softmaxes.push_back(softmax);
      else if (auto div = dyn_cast<DivOp>(op))
        divs.push_back(div);
    });
    // The backward first: a forward fusion erases divs.
    for (DivOp div : divs)
      fuseBackward(div);
    for (SoftmaxOp softmax : softmaxes)
      fuseForward(softmax);
  }
};

} // namespace
