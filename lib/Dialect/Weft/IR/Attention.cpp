//===- Attention.cpp - weft.attention and weft.attention_grad -------------===//
//
// Shapes, verification, cost and the derivative rule of the fused core
// attention (WeftAttentionOps.td).
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace weft;

namespace {

/// The shapes of (q, k, v): [.., Sq, D], [.., Sk, D], [.., Sk, Dv].
struct AttentionShape {
  int64_t batch = 1, sq = 0, sk = 0, d = 0, dv = 0;
};

/// [B, S, H, D] -> [B, H, S, D] (a "bshd" operand in the canonical form),
/// and back: the permutation is its own inverse.
SmallVector<int64_t> swapSeqHeads(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> out(shape);
  std::swap(out[1], out[2]);
  return out;
}

/// An operand's shape in the canonical form [.., S, D]: "bshd" swaps the
/// sequence and heads, "bs3hd" drops the part dim of [B, S, 3, H, D] too.
SmallVector<int64_t> canonicalShape(RankedTensorType t, bool seqFirst,
                                    bool packed) {
  SmallVector<int64_t> shape(t.getShape());
  if (packed)
    shape.erase(shape.begin() + 2);
  return seqFirst ? swapSeqHeads(shape) : shape;
}

LogicalResult verifyDropout(Operation *op, std::optional<APFloat> ratio) {
  if (!ratio)
    return success();
  double p = ratio->convertToDouble();
  if (!(p >= 0.0 && p < 1.0))
    return op->emitOpError("dropout_ratio ") << p << " not in [0, 1)";
  return success();
}

/// Reads q, k, v of any layout through their canonical [.., S, D] shapes:
/// the (batch, head) dims are the leading ones.
AttentionShape shapeOf(Value q, Value v, Value k,
                       std::optional<StringRef> layout) {
  auto canonical = [&](Value x) {
    return canonicalShape(cast<RankedTensorType>(x.getType()),
                          layout.has_value(), layout == kAttentionBs3hd);
  };
  SmallVector<int64_t> qs = canonical(q);
  AttentionShape s;
  s.sq = qs[qs.size() - 2];
  s.d = qs.back();
  s.batch = 1;
  for (int64_t dim : ArrayRef<int64_t>(qs).drop_back(2))
    s.batch *= dim;
  s.sk = canonical(k)[qs.size() - 2];
  s.dv = canonical(v).back();
  return s;
}

} // namespace

/// Not a Weft_KernelTypedOp only because it is not Pure (its dropout
/// draws); the type rule is the kernel's all the same.
LogicalResult AttentionOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &out) {
  return inferKernelTypes<AttentionOp>(ctx, loc, adaptor, out);
}

/// Under "bs3hd" q, k and v are one value: its gradient is the packed one
/// the backward gives operand 0 (buildGradients).
LogicalResult verifyPacked(Operation *op, std::optional<StringRef> layout) {
  if (layout != kAttentionBs3hd)
    return success();
  if (op->getOperand(1) != op->getOperand(0) ||
      op->getOperand(2) != op->getOperand(0))
    return op->emitOpError("layout \"bs3hd\" names one packed value as q, k "
                           "and v");
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyPacked(*this, getLayout())))
    return failure();
  return verifyDropout(*this, getDropoutRatio());
}

int64_t AttentionOp::getFlops() {
  AttentionShape s = shapeOf(getQ(), getV(), getK(), getLayout());
  int64_t scores = s.batch * s.sq * s.sk;
  return 2 * scores * (s.d + s.dv) + (getDropoutRatio() ? 7 : 5) * scores;
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyPacked(*this, getLayout())))
    return failure();
  return verifyDropout(*this, getDropoutRatio());
}

int64_t AttentionGradOp::getFlops() {
  AttentionShape s = shapeOf(getQ(), getV(), getK(), getLayout());
  int64_t scores = s.batch * s.sq * s.sk;
  return 2 * scores * (3 * s.d + 2 * s.dv) + 8 * scores;
}

LogicalResult AttentionOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  dxs.assign(getNumOperands(), Value());
  if (!dys[0])
    return success();
  if (dys[1])
    return emitOpError("autodiff: the loss depends on attention's stats, "
                       "whose gradient weft does not implement");
  auto grad = AttentionGradOp::create(
      b, getLoc(), getQ(), getK(), getV(), getOutput(), getStats(), dys[0],
      getBias(), getScaleAttr(), getCausalAttr(), getDropoutRatioAttr(),
      getSeedAttr(), getLayoutAttr());
  // Under bs3hd operand 0 is q, k and v: the packed gradient goes to it
  // once (autodiff would sum a gradient per operand). The bias (operand 3)
  // gets none: weft-fuse-attention takes only one no parameter reaches.
  for (auto [dx, g] : llvm::zip(dxs, grad.getGrads()))
    dx = g;
  return success();
}
