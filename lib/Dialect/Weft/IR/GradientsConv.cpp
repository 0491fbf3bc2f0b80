//===- GradientsConv.cpp - derivative rules: convolution, pooling, batch
//                          norm, resize, pad
//                          -------------------------------===//
//
// The input gradient of a convolution is the transposed convolution of dY
// with the same weights and window (and vice versa); weight gradients are
// conv_weight_grad. The output_padding of that transposed convolution makes
// its result exactly the input's extent when the stride skipped a tail.
//
//===----------------------------------------------------------------------===//

#include "GradientUtils.h"

using namespace mlir;
using namespace weft;
using namespace weft::grad;

namespace {
/// Sums dY over every dim but the channel dim 1: the bias gradient.
Value biasGrad(OpBuilder &b, Location loc, Value dy) {
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < typeOf(dy).getRank(); ++d)
    axes.push_back(d);
  return ReduceSumOp::create(b, loc, dy, axes, /*keepdims=*/false);
}

/// conv_transpose of `dy` with `weight` reproducing `target`'s spatial
/// extent (the input gradient of conv(target-shaped x, weight)).
Value transposedConv(OpBuilder &b, Location loc, Value dy, Value weight,
                     RankedTensorType target, ArrayRef<int64_t> strides,
                     ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                     int64_t group) {
  RankedTensorType dyType = typeOf(dy), w = typeOf(weight);
  int64_t n = target.getRank() - 2;
  SmallVector<int64_t> outputPadding;
  for (int64_t i = 0; i < n; ++i) {
    int64_t span = strides[i] * (dyType.getDimSize(i + 2) - 1) +
                   (w.getDimSize(i + 2) - 1) * dilations[i] + 1 - pads[i] -
                   pads[i + n];
    outputPadding.push_back(target.getDimSize(i + 2) - span);
  }
  return ConvTransposeOp::create(
      b, loc, dy, weight, Value(), b.getDenseI64ArrayAttr(strides),
      b.getDenseI64ArrayAttr(pads), b.getDenseI64ArrayAttr(dilations),
      b.getDenseI64ArrayAttr(outputPadding), b.getI64IntegerAttr(group));
}

SmallVector<int64_t> spatialOf(Value v) {
  auto shape = typeOf(v).getShape();
  return SmallVector<int64_t>(shape.begin() + 2, shape.end());
}
} // namespace

LogicalResult ConvOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  Location loc = getLoc();
  Value dy = dys[0];
  dxs[0] = transposedConv(b, loc, dy, getWeight(), typeOf(getInput()),
                          getStrides(), getPads(), getDilations(), getGroup());
  dxs[1] = ConvWeightGradOp::create(
      b, loc, getInput(), dy, b.getDenseI64ArrayAttr(spatialOf(getWeight())),
      getStridesAttr(), getPadsAttr(), getDilationsAttr(), getGroupAttr());
  if (getBias())
    dxs[2] = biasGrad(b, loc, dy);
  return success();
}

LogicalResult ConvTransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                              SmallVectorImpl<Value> &dxs) {
  // y = conv_transpose(x, W) is the adjoint of x = conv(y, W): dX = conv(dY,
  // W).
  if (!prepare(*this, dys, dxs))
    return success();
  Location loc = getLoc();
  Value dy = dys[0];
  dxs[0] = ConvOp::create(b, loc, dy, getWeight(), Value(), getStridesAttr(),
                          getPadsAttr(), getDilationsAttr(), getGroupAttr());
  dxs[1] = ConvWeightGradOp::create(
      b, loc, dy, getInput(), b.getDenseI64ArrayAttr(spatialOf(getWeight())),
      getStridesAttr(), getPadsAttr(), getDilationsAttr(), getGroupAttr());
  if (getBias())
    dxs[2] = biasGrad(b, loc, dy);
  return success();
}

LogicalResult MaxPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getInput()))
    dxs[0] =
        MaxPoolGradOp::create(b, getLoc(), getInput().getType(), getInput(),
                              dys[0], getKernelShapeAttr(), getStridesAttr(),
                              getPadsAttr(), getDilationsAttr());
  return success();
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs))
    dxs[0] =
        AvgPoolGradOp::create(b, getLoc(), getInput().getType(), getInput(),
                              dys[0], getKernelShapeAttr(), getStridesAttr(),
                              getPadsAttr(), getCountIncludePadAttr());
  return success();
}

LogicalResult BatchNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  // Running statistics (results 1, 2) are state: they carry no gradient.
  if (!prepare(*this, dys, dxs) || !dys[0])
    return success();
  auto grad = BatchNormGradOp::create(b, getLoc(), getInput(), getScale(),
                                      getMean(), getVar(), dys[0],
                                      getEpsilonAttr(), getTrainingAttr());
  dxs[0] = grad.getInputGrad();
  dxs[1] = grad.getScaleGrad();
  dxs[2] = grad.getBiasGrad();
  return success();
}

LogicalResult ResizeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getInput()))
    dxs[0] = ResizeGradOp::create(
        b, getLoc(), getInput().getType(), getInput(), dys[0], getScalesAttr(),
        getCoordinateTransformationModeAttr(), getNearestModeAttr());
  return success();
}

LogicalResult PadOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs) || !isFloat(getInput()))
    return success();
  // The gradient is the interior of dY: a slice at the begin pads.
  RankedTensorType input = typeOf(getInput());
  int64_t rank = input.getRank();
  SmallVector<int64_t> starts, ends, steps(rank, 1);
  for (int64_t d = 0; d < rank; ++d) {
    if (getPads()[d] < 0 || getPads()[d + rank] < 0)
      return emitOpError("autodiff: cropping pads have no gradient rule yet");
    starts.push_back(getPads()[d]);
    ends.push_back(getPads()[d] + input.getDimSize(d));
  }
  dxs[0] = SliceOp::create(b, getLoc(), dys[0], starts, ends, steps);
  return success();
}
