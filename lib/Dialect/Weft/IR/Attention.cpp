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

/// Checks q, k, v against each other; on success returns the output type
/// [.., Sq, Dv] and the statistics' type [.., Sq], f32 (f64 for f64 q).
LogicalResult inferAttention(std::optional<Location> loc, Type qType,
                             Type kType, Type vType, bool causal,
                             SmallVectorImpl<Type> &out) {
  auto q = cast<RankedTensorType>(qType), k = cast<RankedTensorType>(kType),
       v = cast<RankedTensorType>(vType);
  if (q.getRank() < 2 || k.getRank() != q.getRank() ||
      v.getRank() != q.getRank())
    return emitOptionalError(loc,
                             "attention: q, k and v must have one rank "
                             ">= 2, got ",
                             q, ", ", k, ", ", v);
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType())
    return emitOptionalError(loc,
                             "attention: q, k and v must have one "
                             "dtype, got ",
                             q, ", ", k, ", ", v);
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  int64_t r = q.getRank();
  if (qs.drop_back(2) != ks.drop_back(2) || qs.drop_back(2) != vs.drop_back(2))
    return emitOptionalError(loc,
                             "attention: q, k and v must have the same "
                             "leading dims, got ",
                             q, ", ", k, ", ", v);
  if (ks[r - 1] != qs[r - 1] || vs[r - 2] != ks[r - 2])
    return emitOptionalError(loc,
                             "attention: expected q [.., Sq, D], k "
                             "[.., Sk, D], v [.., Sk, Dv], got ",
                             q, ", ", k, ", ", v);
  if (causal && qs[r - 2] != ks[r - 2])
    return emitOptionalError(loc,
                             "attention: a causal mask needs as many "
                             "queries as keys, got ",
                             qs[r - 2], " and ", ks[r - 2]);
  SmallVector<int64_t> outShape(qs.drop_back());
  outShape.push_back(vs[r - 1]);
  out.push_back(RankedTensorType::get(outShape, q.getElementType()));
  Type stats = q.getElementType().isF64() ? q.getElementType()
                                          : Float32Type::get(q.getContext());
  out.push_back(RankedTensorType::get(qs.drop_back(), stats));
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

AttentionShape shapeOf(Value q, Value v, Value k) {
  auto qs = cast<RankedTensorType>(q.getType()).getShape();
  AttentionShape s;
  for (int64_t d : qs.drop_back(2))
    s.batch *= d;
  s.sq = qs[qs.size() - 2];
  s.d = qs.back();
  s.sk = cast<RankedTensorType>(k.getType()).getShape().drop_back().back();
  s.dv = cast<RankedTensorType>(v.getType()).getShape().back();
  return s;
}

} // namespace

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &out) {
  return inferAttention(loc, adaptor.getQ().getType(), adaptor.getK().getType(),
                        adaptor.getV().getType(), adaptor.getCausal(), out);
}

LogicalResult AttentionOp::verify() {
  return verifyDropout(*this, getDropoutRatio());
}

int64_t AttentionOp::getFlops() {
  AttentionShape s = shapeOf(getQ(), getV(), getK());
  int64_t scores = s.batch * s.sq * s.sk;
  return 2 * scores * (s.d + s.dv) + (getDropoutRatio() ? 7 : 5) * scores;
}

LogicalResult AttentionGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &out) {
  SmallVector<Type> forward;
  if (failed(inferAttention(loc, adaptor.getQ().getType(),
                            adaptor.getK().getType(), adaptor.getV().getType(),
                            adaptor.getCausal(), forward)))
    return failure();
  if (adaptor.getOutput().getType() != forward[0] ||
      adaptor.getGrad().getType() != forward[0] ||
      adaptor.getStats().getType() != forward[1])
    return emitOptionalError(loc, "attention_grad: output and grad must be ",
                             forward[0], " and stats ", forward[1]);
  out.push_back(adaptor.getQ().getType());
  out.push_back(adaptor.getK().getType());
  out.push_back(adaptor.getV().getType());
  return success();
}

LogicalResult AttentionGradOp::verify() {
  return verifyDropout(*this, getDropoutRatio());
}

int64_t AttentionGradOp::getFlops() {
  AttentionShape s = shapeOf(getQ(), getV(), getK());
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
      getScaleAttr(), getCausalAttr(), getDropoutRatioAttr(), getSeedAttr());
  dxs[0] = grad.getQGrad();
  dxs[1] = grad.getKGrad();
  dxs[2] = grad.getVGrad();
  return success();
}
