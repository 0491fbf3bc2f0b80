//===- GradientsNN.cpp - derivative rules: linear algebra, normalisation,
//                        reductions, data movement, losses
//                        ----------------===//

#include "GradientUtils.h"

using namespace mlir;
using namespace weft;
using namespace weft::grad;

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  Location loc = getLoc();
  Value a = getLhs(), w = getRhs(), dy = dys[0];
  RankedTensorType aType = typeOf(a), wType = typeOf(w);
  // numpy promotion: work on [.., M, K] x [.., K, N] and reshape back.
  SmallVector<int64_t> aShape(aType.getShape()), wShape(wType.getShape());
  if (aShape.size() == 1)
    aShape.insert(aShape.begin(), 1);
  if (wShape.size() == 1)
    wShape.push_back(1);
  Value a2 = reshape(b, loc, a, aShape), w2 = reshape(b, loc, w, wShape);
  SmallVector<int64_t> yShape(typeOf(dy).getShape());
  if (aType.getRank() == 1)
    yShape.insert(yShape.end() - (wType.getRank() == 1 ? 0 : 1), 1);
  if (wType.getRank() == 1)
    yShape.push_back(1);
  Value dy2 = reshape(b, loc, dy, yShape);

  bool ta = getTransA(), tb = getTransB();
  if (wType.getRank() == 2 && !ta && !tb) {
    // A 2-D weight (a linear layer): fold A's batch dims into the rows and
    // let BLAS read the transposes (GEMM flags) instead of materialising
    // them: dA = dY W^T is one [B*M, N] x [N, K] product, dW = A^T dY one
    // [K, B*M] x [B*M, N] product.
    auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
      return GemmOp::create(b, loc, x, y, Value(), b.getF64FloatAttr(1.0),
                            b.getF64FloatAttr(0.0), b.getBoolAttr(tx),
                            b.getBoolAttr(ty));
    };
    int64_t k = aShape.back(), n = wShape.back();
    Value aFlat = reshape(b, loc, a2, {typeOf(a2).getNumElements() / k, k});
    Value dyFlat = reshape(b, loc, dy2, {typeOf(dy2).getNumElements() / n, n});
    // W = V^T (torch.nn.Linear's export, x Transpose(V)): dY W^T = dY V.
    auto transposed = w.getDefiningOp<TransposeOp>();
    Value da = transposed ? gemm(dyFlat, transposed.getInput(), false, false)
                          : gemm(dyFlat, w, false, true);
    dxs[0] = reshape(b, loc, da, aType.getShape());
    // For W = V^T, dW is built as (dY^T A)^T so that the transpose's own
    // gradient rule folds the pair and dV = dY^T A is one GEMM.
    dxs[1] = transposed
                 ? Value(TransposeOp::create(b, loc,
                                             gemm(dyFlat, aFlat, true, false),
                                             ArrayRef<int64_t>{1, 0}))
                 : gemm(aFlat, dyFlat, true, false);
    return success();
  }

  // Y = op(A) op(B), op a transpose of the last two dims under transA
  // (transB); the products read their operands transposed (the flags), a
  // transpose's input instead of the transpose: nothing is copied.
  auto product = [&](Value x, bool tx, Value y, bool ty) -> Value {
    auto [xs, txs] = readTransposed(x, tx);
    auto [ys, tys] = readTransposed(y, ty);
    return MatMulOp::create(b, loc, xs, ys, txs, tys);
  };
  // dop(A) = dY op(B)^T and dop(B) = op(A)^T dY; dA (dB) is its transpose
  // under transA (transB). Each gradient is one product, or the transpose
  // of one where the operand is a transpose moving its input's last dim to
  // second last (attention's k^T): the transpose's own rule then composes
  // the two into one transpose that keeps the last dim (rows copied
  // whole), or cancels them (W = V^T); not where the transpose has other
  // readers, whose gradients its rule would sum first. Summed over
  // broadcast batch dims.
  auto onlyHere = [&](Value x) {
    return llvm::all_of(
        x.getUsers(), [&](Operation *user) { return user == getOperation(); });
  };
  bool viaA = onlyHere(a2) && movesLastDimToSecondLast(a2),
       viaB = onlyHere(w2) && movesLastDimToSecondLast(w2);
  auto gradient = [&](Value x, bool trans, bool viaTranspose, auto plain,
                      auto transposed) {
    Value g = trans != viaTranspose ? transposed() : plain();
    if (viaTranspose)
      g = transposeLast(b, loc, g);
    return unbroadcast(b, loc, g, typeOf(x));
  };
  Value da = gradient(
      a2, ta, viaA, [&] { return product(dy2, false, w2, !tb); },
      [&] { return product(w2, tb, dy2, true); });
  dxs[0] = reshape(b, loc, da, aType.getShape());
  Value dw = gradient(
      w2, tb, viaB, [&] { return product(a2, !ta, dy2, false); },
      [&] { return product(dy2, true, a2, ta); });
  dxs[1] = reshape(b, loc, dw, wType.getShape());
  return success();
}

LogicalResult GemmOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  // Y = alpha op(A) op(B) + beta C.
  if (!prepare(*this, dys, dxs))
    return success();
  Location loc = getLoc();
  Value dy = dys[0];
  bool ta = getTransA(), tb = getTransB();
  FloatAttr alpha = getAlphaAttr(), zero = b.getF64FloatAttr(0.0);
  auto gemm = [&](Value x, Value y, bool tx, bool ty) {
    return GemmOp::create(b, loc, x, y, Value(), alpha, zero, b.getBoolAttr(tx),
                          b.getBoolAttr(ty));
  };
  // dop(A) = dY op(B)^T; dA is its transpose when transA.
  dxs[0] = ta ? gemm(getB(), dy, tb, true) : gemm(dy, getB(), false, !tb);
  // dop(B) = op(A)^T dY; dB is its transpose when transB.
  dxs[1] = tb ? gemm(dy, getA(), true, ta) : gemm(getA(), dy, !ta, false);
  // dC = beta dY summed over C's broadcast dims; a Linear's bias (beta 1)
  // skips the product, a pass over the activations.
  if (Value c = getC()) {
    Value scaled =
        addsCUnscaled()
            ? dy
            : mul(b, loc, dy, scalar(b, loc, dy, getBeta().convertToDouble()));
    dxs[2] = unbroadcast(b, loc, scaled, typeOf(c));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation and activations with an axis
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs))
    dxs[0] = SoftmaxGradOp::create(b, getLoc(), getType(), getResult(), dys[0],
                                   getAxis());
  return success();
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs))
    dxs[0] = LogSoftmaxGradOp::create(b, getLoc(), getType(), getResult(),
                                      dys[0], getAxis());
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  if (dys[1] || dys[2])
    return emitOpError("autodiff: the loss depends on layer_norm's mean or "
                       "inv_std_dev, whose gradient weft does not implement");
  auto grad =
      LayerNormGradOp::create(b, getLoc(), getInput(), getScale(), getMean(),
                              getInvStdDev(), dys[0], Value(), getAxis());
  dxs[0] = grad.getInputGrad();
  dxs[1] = grad.getScaleGrad();
  if (getBias())
    dxs[2] = grad.getBiasGrad();
  return success();
}

LogicalResult RotaryOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  // The tables are constants (weft-fuse-rotary): no gradient for them.
  dxs[0] = RotaryGradOp::create(b, getLoc(), dys[0], getCos(), getSin(),
                                getAxisAttr(), getInterleavedAttr());
  return success();
}

LogicalResult RmsNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  if (dys[1])
    return emitOpError("autodiff: the loss depends on rms_norm's inv_rms, "
                       "whose gradient weft does not implement");
  auto grad = RmsNormGradOp::create(b, getLoc(), getInput(), getScale(),
                                    getInvRms(), dys[0], getAxis());
  dxs[0] = grad.getInputGrad();
  dxs[1] = grad.getScaleGrad();
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs) || !dys[0])
    return success();
  double ratio = getRatio().convertToDouble();
  if (!getTraining() || ratio == 0.0) {
    dxs[0] = dys[0]; // identity
    return success();
  }
  dxs[0] = DropoutGradOp::create(b, getLoc(), dys[0].getType(), dys[0],
                                 getMask(), getRatioAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

namespace {
/// dy of a reduction, broadcast back to the input's shape.
Value expandReduced(OpBuilder &b, Location loc, Value dy,
                    RankedTensorType input, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(input.getShape());
  for (int64_t axis : axes)
    kept[axis] = 1;
  return ExpandOp::create(b, loc, reshape(b, loc, dy, kept), input.getShape());
}
} // namespace

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getInput()))
    dxs[0] = expandReduced(b, getLoc(), dys[0], typeOf(getInput()), getAxes());
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs) || !isFloat(getInput()))
    return success();
  Location loc = getLoc();
  RankedTensorType input = typeOf(getInput());
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= input.getDimSize(axis);
  Value scaled = mul(b, loc, dys[0], scalar(b, loc, dys[0], 1.0 / count));
  dxs[0] = expandReduced(b, loc, scaled, input, getAxes());
  return success();
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  // The gradient flows to every input element equal to the maximum.
  if (!prepare(*this, dys, dxs) || !isFloat(getInput()))
    return success();
  Location loc = getLoc();
  RankedTensorType input = typeOf(getInput());
  Value max = expandReduced(b, loc, getResult(), input, getAxes());
  Value isMax = EqualOp::create(b, loc, getInput(), max);
  Value dy = expandReduced(b, loc, dys[0], input, getAxes());
  dxs[0] = WhereOp::create(b, loc, isMax, dy, scalar(b, loc, dy, 0));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getInput()))
    dxs[0] = reshape(b, getLoc(), dys[0], typeOf(getInput()).getShape());
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs) || !isFloat(getInput()))
    return success();
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  // createOrFold: (X^T)^T is X (see MatMulOp's rule for W = V^T).
  dxs[0] = b.createOrFold<TransposeOp>(getLoc(), dys[0], inverse);
  return success();
}

LogicalResult ExpandOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getInput()))
    dxs[0] = unbroadcast(b, getLoc(), dys[0], typeOf(getInput()));
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs) || !isFloat(getResult()))
    return success();
  SmallVector<int64_t> sizes;
  for (Value in : getInputs())
    sizes.push_back(typeOf(in).getDimSize(getAxis()));
  auto split = SplitOp::create(b, getLoc(), dys[0], getAxis(), sizes);
  for (auto [i, piece] : llvm::enumerate(split.getResults()))
    dxs[i] = piece;
  return success();
}

LogicalResult SplitOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs) || !isFloat(getInput()))
    return success();
  Location loc = getLoc();
  SmallVector<Value> pieces;
  for (auto [result, dy] : llvm::zip(getResults(), dys))
    pieces.push_back(dy ? dy : splat(b, loc, typeOf(result), 0.0));
  dxs[0] = ConcatOp::create(b, loc, pieces, getAxis());
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs) || !isFloat(getInput()))
    return success();
  // Unit steps: the gradient is dy zero-padded back to the input's extent.
  RankedTensorType input = typeOf(getInput());
  int64_t rank = input.getRank();
  SmallVector<int64_t> pads(2 * rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (getSteps()[d] != 1)
      return emitOpError("autodiff: slices with steps other than 1 have no "
                         "gradient rule yet");
    pads[d] = getStarts()[d];
    pads[d + rank] = input.getDimSize(d) - getEnds()[d];
  }
  dxs[0] = PadOp::create(b, getLoc(), dys[0], b.getDenseI64ArrayAttr(pads),
                         b.getF64FloatAttr(0.0));
  return success();
}

Value weft::grad::maskPaddingRows(OpBuilder &b, Operation *op, Value dy,
                                  Value indices) {
  auto row = op->getAttrOfType<IntegerAttr>(kPaddingIdxAttr);
  if (!row)
    return dy;
  Location loc = op->getLoc();
  Value pad = scalar(b, loc, indices, double(row.getInt()));
  // [indices..] -> [indices.., 1, ..]: one flag per looked-up row of dy.
  SmallVector<int64_t> shape(typeOf(indices).getShape());
  shape.resize(typeOf(dy).getRank(), 1);
  Value padded = reshape(b, loc, EqualOp::create(b, loc, indices, pad), shape);
  return WhereOp::create(b, loc, padded, scalar(b, loc, dy, 0), dy);
}

LogicalResult GatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getData()))
    dxs[0] = GatherGradOp::create(
        b, getLoc(), maskPaddingRows(b, *this, dys[0], getIndices()),
        getIndices(),
        /*accumulate=*/Value(), getAxis(), typeOf(getData()).getShape());
  return success();
}

LogicalResult GatherElementsOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> dys,
                                               SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getData()))
    dxs[0] = GatherElementsGradOp::create(
        b, getLoc(), dys[0], getIndices(), b.getI64IntegerAttr(getAxis()),
        b.getDenseI64ArrayAttr(typeOf(getData()).getShape()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult
SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  if (dys[1])
    return emitOpError("autodiff: the loss depends on log_prob, whose "
                       "gradient weft does not implement");
  // Widened log-probabilities (log_prob_type): the gradient is written in
  // the scores' own type.
  Type scores = getScores().getType().getElementType();
  TypeAttr gradType = scores != getLogProb().getType().getElementType()
                          ? TypeAttr::get(scores)
                          : TypeAttr();
  // log_sum_exp: the gradient recomputes the log-probabilities from the
  // scores and it; its result then has the scores' type.
  bool fromScores = getLogSumExp();
  dxs[0] = SoftmaxCrossEntropyGradOp::create(
      b, getLoc(), fromScores ? getScores() : getLogProb(), getLabels(), dys[0],
      getWeights(), fromScores ? getLogProb() : Value(), getReductionAttr(),
      getIgnoreIndexAttr(), fromScores ? TypeAttr() : gradType);
  return success();
}

LogicalResult NllLossOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs))
    dxs[0] = NllLossGradOp::create(b, getLoc(), getInput(), getTarget(), dys[0],
                                   getWeight(), getReductionAttr(),
                                   getIgnoreIndexAttr());
  return success();
}
