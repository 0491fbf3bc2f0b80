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

/// Checks q, k, v against each other; on success returns the output type
/// [.., Sq, Dv] ([B, Sq, H, Dv] under "bshd" and "bs3hd") and the
/// statistics' type [.., Sq] ([B, H, Sq]), f32 (f64 for f64 q).
LogicalResult inferAttention(std::optional<Location> loc, Type qType,
                             Type kType, Type vType, bool causal,
                             std::optional<StringRef> layout,
                             SmallVectorImpl<Type> &out) {
  auto q = cast<RankedTensorType>(qType), k = cast<RankedTensorType>(kType),
       v = cast<RankedTensorType>(vType);
  bool packed = layout == kAttentionBs3hd;
  bool seqFirst = layout.has_value();
  if (seqFirst && *layout != kAttentionBshd && !packed)
    return emitOptionalError(loc, "attention: layout '", *layout,
                             "' is not \"bshd\" or \"bs3hd\" (absent: "
                             "[.., S, D])");
  if (q.getRank() < 2 || k.getRank() != q.getRank() ||
      v.getRank() != q.getRank())
    return emitOptionalError(loc,
                             "attention: q, k and v must have one rank "
                             ">= 2, got ",
                             q, ", ", k, ", ", v);
  if (seqFirst && !packed && q.getRank() != 4)
    return emitOptionalError(loc,
                             "attention: layout \"bshd\" takes q, k and v "
                             "[B, S, H, D], got ",
                             q);
  if (packed && (q.getRank() != 5 || q.getDimSize(2) != 3 || k != q || v != q))
    return emitOptionalError(loc,
                             "attention: layout \"bs3hd\" takes q, k and v "
                             "as one packed [B, S, 3, H, D] value, got ",
                             q, ", ", k, ", ", v);
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return emitOptionalError(loc,
                             "attention: q, k and v must have one "
                             "dtype, got ",
                             q, ", ", k, ", ", v);
  // The checks below read the canonical [.., S, D] shapes.
  auto canonical = [&](RankedTensorType t) {
    return canonicalShape(t, seqFirst, packed);
  };
  SmallVector<int64_t> qs = canonical(q), ks = canonical(k), vs = canonical(v);
  int64_t r = int64_t(qs.size());
  ArrayRef<int64_t> qRows = ArrayRef<int64_t>(qs).drop_back(),
                    qLead = qRows.drop_back();
  if (qLead != ArrayRef<int64_t>(ks).drop_back(2) ||
      qLead != ArrayRef<int64_t>(vs).drop_back(2))
    return emitOptionalError(loc,
                             "attention: q, k and v must have the same "
                             "batch and head dims, got ",
                             q, ", ", k, ", ", v);
  if (ks[r - 1] != qs[r - 1] || vs[r - 2] != ks[r - 2])
    return emitOptionalError(loc,
                             seqFirst
                                 ? "attention: expected q [B, Sq, H, D], k "
                                   "[B, Sk, H, D], v [B, Sk, H, Dv], got "
                                 : "attention: expected q [.., Sq, D], k "
                                   "[.., Sk, D], v [.., Sk, Dv], got ",
                             q, ", ", k, ", ", v);
  if (causal && qs[r - 2] != ks[r - 2])
    return emitOptionalError(loc,
                             "attention: a causal mask needs as many "
                             "queries as keys, got ",
                             qs[r - 2], " and ", ks[r - 2]);
  SmallVector<int64_t> outShape(qRows);
  outShape.push_back(vs[r - 1]);
  if (seqFirst)
    outShape = swapSeqHeads(outShape);
  out.push_back(RankedTensorType::get(outShape, q.getElementType()));
  Type stats = q.getElementType().isF64() ? q.getElementType()
                                          : Float32Type::get(q.getContext());
  out.push_back(RankedTensorType::get(qRows, stats));
  return success();
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

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &out) {
  return inferAttention(loc, adaptor.getQ().getType(), adaptor.getK().getType(),
                        adaptor.getV().getType(), adaptor.getCausal(),
                        adaptor.getLayout(), out);
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
      getScaleAttr(), getCausalAttr(), getDropoutRatioAttr(), getSeedAttr(),
      getLayoutAttr());
  // Under bs3hd operand 0 is q, k and v: the packed gradient goes to it
  // once (autodiff would sum a gradient per operand).
  for (auto [dx, g] : llvm::zip(dxs, grad.getGrads()))
    dx = g;
  return success();
}
