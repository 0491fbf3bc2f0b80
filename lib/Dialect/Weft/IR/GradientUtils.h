//===- GradientUtils.h - helpers shared by the gradient rules ---*- C++ -*-===//
#ifndef WEFT_LIB_DIALECT_WEFT_IR_GRADIENTUTILS_H
#define WEFT_LIB_DIALECT_WEFT_IR_GRADIENTUTILS_H

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

#include <numeric>
#include <utility>

namespace weft::grad {
using namespace mlir;

inline RankedTensorType typeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}
inline bool isFloat(Value v) {
  return isa<FloatType>(typeOf(v).getElementType());
}

inline Value splat(OpBuilder &b, Location loc, RankedTensorType type,
                   double v) {
  Type element = type.getElementType();
  TypedAttr attr = isa<FloatType>(element)
                       ? TypedAttr(b.getFloatAttr(element, v))
                       : b.getIntegerAttr(element, int64_t(v));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, attr));
}
/// A rank-0 constant of `like`'s element type, float or integer (broadcasts
/// against anything).
inline Value scalar(OpBuilder &b, Location loc, Value like, double v) {
  return splat(b, loc, RankedTensorType::get({}, typeOf(like).getElementType()),
               v);
}
inline Value add(OpBuilder &b, Location loc, Value x, Value y) {
  return AddOp::create(b, loc, x, y);
}
inline Value sub(OpBuilder &b, Location loc, Value x, Value y) {
  return SubOp::create(b, loc, x, y);
}
inline Value mul(OpBuilder &b, Location loc, Value x, Value y) {
  return MulOp::create(b, loc, x, y);
}
inline Value div(OpBuilder &b, Location loc, Value x, Value y) {
  return DivOp::create(b, loc, x, y);
}
inline Value neg(OpBuilder &b, Location loc, Value x) {
  return NegOp::create(b, loc, x.getType(), x);
}
inline Value reshape(OpBuilder &b, Location loc, Value x,
                     ArrayRef<int64_t> shape) {
  if (typeOf(x).getShape() == shape)
    return x;
  return ReshapeOp::create(b, loc, x, shape);
}

/// `dy` of a lookup `op` (gather or vocab_parallel_gather on axis 0) with
/// the rows looked up at `op`'s kPaddingIdxAttr zeroed, so that row of the
/// table gets no gradient from it (torch's nn.Embedding padding_idx: the
/// embedding backward skips those positions); `dy` when `op` has none.
Value maskPaddingRows(OpBuilder &b, Operation *op, Value dy, Value indices);

/// Sums `grad` down to `target`'s shape: the adjoint of numpy broadcasting.
inline Value unbroadcast(OpBuilder &b, Location loc, Value grad,
                         RankedTensorType target) {
  RankedTensorType g = typeOf(grad);
  if (g.getShape() == target.getShape())
    return grad;
  int64_t offset = g.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < g.getRank(); ++i)
    if (i < offset ||
        (target.getDimSize(i - offset) == 1 && g.getDimSize(i) != 1))
      axes.push_back(i);
  Value sum = axes.empty() ? grad
                           : Value(ReduceSumOp::create(b, loc, grad, axes,
                                                       /*keepdims=*/true));
  return reshape(b, loc, sum, target.getShape());
}

/// Swaps the last two dims; (X^T)^T folds to X, and a transpose of a
/// transpose composes into one (TransposeOp::fold).
inline Value transposeLast(OpBuilder &b, Location loc, Value x) {
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return b.createOrFold<TransposeOp>(loc, x, perm);
}

/// Whether `x` is a transpose putting its input's last dim second last
/// (W = V^T, attention's k^T = transpose(k, [0, 2, 3, 1])).
inline bool movesLastDimToSecondLast(Value x) {
  auto t = x.getDefiningOp<TransposeOp>();
  if (!t)
    return false;
  ArrayRef<int64_t> perm = t.getPerm();
  int64_t rank = perm.size();
  return rank >= 2 && perm[rank - 2] == rank - 1;
}

/// `x`, read transposed when `trans` (a matmul's transA/transB), as the
/// operand to store and its flag: a transpose of x's last two dims is read
/// as its input with the flag flipped ((V^T)^T is V), so a product by a
/// transposed weight differentiates against the weight, not a kept W^T.
inline std::pair<Value, bool> readTransposed(Value x, bool trans) {
  auto t = x.getDefiningOp<TransposeOp>();
  if (!t)
    return {x, trans};
  ArrayRef<int64_t> perm = t.getPerm();
  int64_t rank = perm.size();
  for (int64_t i = 0; i < rank; ++i)
    if (perm[i] != (i < rank - 2 ? i : 2 * rank - 3 - i))
      return {x, trans};
  return {t.getInput(), !trans};
}

/// Sets `dxs` to one null per operand; returns false when no result has a
/// gradient (nothing to do).
inline bool prepare(Operation *op, ArrayRef<Value> dys,
                    SmallVectorImpl<Value> &dxs) {
  dxs.assign(op->getNumOperands(), Value());
  return llvm::any_of(dys, [](Value v) { return static_cast<bool>(v); });
}

/// Unary rules: dx = rule(dy), only for float operands.
template <typename Rule>
LogicalResult unaryGrad(Operation *op, ArrayRef<Value> dys,
                        SmallVectorImpl<Value> &dxs, Rule rule) {
  if (prepare(op, dys, dxs) && isFloat(op->getOperand(0)))
    dxs[0] = rule(dys[0]);
  return success();
}

/// Binary rules with broadcasting: gradients for float operands only.
template <typename RuleA, typename RuleB>
LogicalResult binaryGrad(Operation *op, OpBuilder &b, ArrayRef<Value> dys,
                         SmallVectorImpl<Value> &dxs, RuleA ruleA,
                         RuleB ruleB) {
  if (!prepare(op, dys, dxs))
    return success();
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (isFloat(lhs))
    dxs[0] = unbroadcast(b, op->getLoc(), ruleA(dys[0]), typeOf(lhs));
  if (isFloat(rhs))
    dxs[1] = unbroadcast(b, op->getLoc(), ruleB(dys[0]), typeOf(rhs));
  return success();
}

} // namespace weft::grad

#endif // WEFT_LIB_DIALECT_WEFT_IR_GRADIENTUTILS_H
