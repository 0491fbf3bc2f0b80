//===- NNOps.cpp - ONNX neural-network operators -> weft ------------------===//
//
// MatMul/Gemm, normalisation, dropout, reductions, convolution, pooling and
// losses. auto_pad and output_shape are resolved into explicit pads here,
// by the formulas of the ONNX Conv/ConvTranspose/MaxPool specs.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

using namespace mlir;
using namespace weft;

namespace {

LogicalResult convertMatMul(GraphImporter &g, const Node &node) {
  Value a = g.operand(node, 0), b = g.operand(node, 1);
  if (!a || !b)
    return failure();
  return g.bindResults(node, g.build<MatMulOp>(node, a, b));
}

LogicalResult convertGemm(GraphImporter &g, const Node &node) {
  Value a = g.operand(node, 0), b = g.operand(node, 1);
  if (!a || !b)
    return failure();
  Value c = g.optionalOperand(node, 2);
  OpBuilder &builder = g.builder();
  return g.bindResults(
      node, g.build<GemmOp>(node, a, b, c,
                            builder.getF64FloatAttr(g.attrFloat(node, "alpha")),
                            builder.getF64FloatAttr(g.attrFloat(node, "beta")),
                            builder.getBoolAttr(g.attrInt(node, "transA")),
                            builder.getBoolAttr(g.attrInt(node, "transB"))));
}

template <typename OpT>
LogicalResult convertSoftmax(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axis =
      g.normalizeAxis(node, g.attrInt(node, "axis"), type.getRank());
  if (failed(axis))
    return failure();
  g.bind(node, 0, OpT::create(g.builder(), g.loc(node), type, x, *axis));
  return success();
}

/// The first normalised axis of LayerNormalization-17 or
/// RMSNormalization-23 over `x`, whose statistics must be float (weft's
/// kernels keep them in f32).
FailureOr<int64_t> normalizedAxis(GraphImporter &g, const Node &node,
                                  Value x) {
  if (g.attrInt(node, "stash_type") != 1)
    return g.error(node) << "unsupported variant: stash_type other than float";
  return g.normalizeAxis(node, g.attrInt(node, "axis"),
                         cast<RankedTensorType>(x.getType()).getRank());
}

LogicalResult convertLayerNorm(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0), scale = g.operand(node, 1);
  if (!x || !scale)
    return failure();
  FailureOr<int64_t> axis = normalizedAxis(g, node, x);
  if (failed(axis))
    return failure();
  OpBuilder &b = g.builder();
  return g.bindResults(
      node,
      g.build<LayerNormOp>(node, x, scale, g.optionalOperand(node, 2),
                           b.getI64IntegerAttr(*axis),
                           b.getF64FloatAttr(g.attrFloat(node, "epsilon"))));
}

/// RMSNormalization-23 (scale of the normalised dims' shape; Y only).
LogicalResult convertRmsNorm(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0), scale = g.operand(node, 1);
  if (!x || !scale)
    return failure();
  FailureOr<int64_t> axis = normalizedAxis(g, node, x);
  if (failed(axis))
    return failure();
  OpBuilder &b = g.builder();
  Operation *op =
      g.build<RmsNormOp>(node, x, scale, b.getI64IntegerAttr(*axis),
                         b.getF64FloatAttr(g.attrFloat(node, "epsilon")));
  if (!op)
    return failure();
  g.bind(node, 0, op->getResult(0));
  return success();
}

/// CumSum-14: the axis (input 1) must be known at compile time.
LogicalResult convertCumSum(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  const HostTensor *axisArg = g.requireConstant(node, 1, "axis");
  if (!x || !axisArg)
    return failure();
  if (axisArg->size() != 1)
    return g.error(node) << "axis holds " << axisArg->size()
                         << " elements; it must hold one";
  FailureOr<int64_t> axis = g.normalizeAxis(
      node, axisArg->getInt(0), cast<RankedTensorType>(x.getType()).getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = g.builder();
  return g.bindResults(
      node, g.build<CumSumOp>(node, x, b.getI64IntegerAttr(*axis),
                              b.getBoolAttr(g.attrInt(node, "exclusive")),
                              b.getBoolAttr(g.attrInt(node, "reverse"))));
}

LogicalResult convertBatchNorm(GraphImporter &g, const Node &node) {
  SmallVector<Value> operands;
  for (int i = 0; i < 5; ++i) {
    operands.push_back(g.operand(node, i));
    if (!operands.back())
      return failure();
  }
  OpBuilder &b = g.builder();
  bool training = g.attrInt(node, "training_mode");
  return g.bindResults(
      node, g.build<BatchNormOp>(
                node, operands[0], operands[1], operands[2], operands[3],
                operands[4], b.getF64FloatAttr(g.attrFloat(node, "epsilon")),
                b.getF64FloatAttr(g.attrFloat(node, "momentum")),
                b.getBoolAttr(training), b.getBoolAttr(g.producedByPyTorch())));
}

LogicalResult convertDropout(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  double ratio = 0.5;
  bool training = false;
  if (g.has(node, 1)) {
    const HostTensor *t = g.requireConstant(node, 1, "ratio");
    if (!t)
      return failure();
    ratio = t->getDouble(0);
  }
  if (g.has(node, 2)) {
    const HostTensor *t = g.requireConstant(node, 2, "training_mode");
    if (!t)
      return failure();
    training = t->getInt(0) != 0;
  }
  // Inference, or a ratio of 0 (a model trained without dropout exports it
  // anyway): the output is the input (Dropout-13), and with the mask
  // unread nothing is drawn, copied or kept for the backward.
  if ((!training || ratio == 0.0) && !g.used(node, 1)) {
    g.bind(node, 0, x);
    return success();
  }
  OpBuilder &b = g.builder();
  const auto *seed = g.attr(node, "seed");
  return g.bindResults(
      node, g.build<DropoutOp>(
                node, x, b.getF64FloatAttr(ratio), b.getBoolAttr(training),
                seed ? b.getI64IntegerAttr(seed->i()) : IntegerAttr()));
}

/// ReduceSum-13 takes axes as input 1; ReduceMean/ReduceMax-13 as an
/// attribute. No axes means all axes, unless noop_with_empty_axes.
template <typename OpT>
LogicalResult convertReduce(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  FailureOr<SmallVector<int64_t>> axes = g.axes(node, rank);
  if (failed(axes))
    return failure();
  // ReduceSum-13 has the attribute (default 0); at opset 17 the other
  // reductions do not, and reduce all axes when given none.
  if (axes->empty() && !g.attrInt(node, "noop_with_empty_axes", 0))
    for (int64_t i = 0; i < rank; ++i)
      axes->push_back(i);
  OpBuilder &b = g.builder();
  return g.bindResults(
      node, g.build<OpT>(node, x, b.getDenseI64ArrayAttr(*axes),
                         b.getBoolAttr(g.attrInt(node, "keepdims"))));
}

LogicalResult convertGlobalAveragePool(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> spatial;
  for (int64_t i = 2; i < rank; ++i)
    spatial.push_back(i);
  OpBuilder &b = g.builder();
  return g.bindResults(
      node, g.build<ReduceMeanOp>(node, x, b.getDenseI64ArrayAttr(spatial),
                                  b.getBoolAttr(true)));
}

/// Window attributes of Conv/ConvTranspose/pooling with defaults filled in.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

/// Fills defaults and resolves auto_pad (ONNX Conv-11: SAME_* pads so that
/// out = ceil(in / stride), the odd pixel at the end for SAME_UPPER).
FailureOr<Window> readWindow(GraphImporter &g, const Node &node,
                             RankedTensorType input,
                             ArrayRef<int64_t> kernelFromWeight) {
  int64_t n = input.getRank() - 2;
  if (n < 1)
    return g.error(node) << "expects an [N, C, D1..Dn] input, got " << input;
  Window w;
  w.kernel = g.attrInts(node, "kernel_shape");
  if (w.kernel.empty())
    w.kernel.assign(kernelFromWeight.begin(), kernelFromWeight.end());
  w.strides = g.attrInts(node, "strides");
  w.dilations = g.attrInts(node, "dilations");
  w.pads = g.attrInts(node, "pads");
  if (w.strides.empty())
    w.strides.assign(n, 1);
  if (w.dilations.empty())
    w.dilations.assign(n, 1);
  if (w.pads.empty())
    w.pads.assign(2 * n, 0);
  if ((int64_t)w.kernel.size() != n || (int64_t)w.strides.size() != n ||
      (int64_t)w.dilations.size() != n || (int64_t)w.pads.size() != 2 * n)
    return g.error(node) << "kernel_shape/strides/dilations/pads do not "
                            "match the "
                         << n << " spatial dims of " << input;
  std::string autoPad = g.attrString(node, "auto_pad");
  if (autoPad == "VALID") {
    w.pads.assign(2 * n, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < n; ++i) {
      int64_t in = input.getDimSize(i + 2), s = w.strides[i];
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(
          0, (out - 1) * s + (w.kernel[i] - 1) * w.dilations[i] + 1 - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + n] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return g.error(node) << "unknown auto_pad '" << autoPad << "'";
  }
  return w;
}

LogicalResult convertConv(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0), weight = g.operand(node, 1);
  if (!x || !weight)
    return failure();
  auto weightType = cast<RankedTensorType>(weight.getType());
  FailureOr<Window> w =
      readWindow(g, node, cast<RankedTensorType>(x.getType()),
                 weightType.getShape().drop_front(
                     std::min<int64_t>(2, weightType.getRank())));
  if (failed(w))
    return failure();
  OpBuilder &b = g.builder();
  return g.bindResults(
      node, g.build<ConvOp>(node, x, weight, g.optionalOperand(node, 2),
                            b.getDenseI64ArrayAttr(w->strides),
                            b.getDenseI64ArrayAttr(w->pads),
                            b.getDenseI64ArrayAttr(w->dilations),
                            b.getI64IntegerAttr(g.attrInt(node, "group"))));
}

LogicalResult convertConvTranspose(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0), weight = g.operand(node, 1);
  if (!x || !weight)
    return failure();
  auto input = cast<RankedTensorType>(x.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t n = input.getRank() - 2;
  std::string autoPad = g.attrString(node, "auto_pad");
  // readWindow's SAME rule is the forward-conv one; ConvTranspose derives
  // its pads from the output shape below instead.
  Node plain = node;
  for (auto &a : *plain.mutable_attribute())
    if (a.name() == "auto_pad")
      a.set_s("NOTSET");
  FailureOr<Window> w =
      readWindow(g, plain, input,
                 weightType.getShape().drop_front(
                     std::min<int64_t>(2, weightType.getRank())));
  if (failed(w))
    return failure();
  SmallVector<int64_t> outputPadding = g.attrInts(node, "output_padding");
  if (outputPadding.empty())
    outputPadding.assign(n, 0);
  SmallVector<int64_t> outputShape = g.attrInts(node, "output_shape");
  if (outputShape.empty() &&
      (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER"))
    for (int64_t i = 0; i < n; ++i)
      outputShape.push_back(input.getDimSize(i + 2) * w->strides[i]);
  if (!outputShape.empty()) {
    // ONNX ConvTranspose-11: total_padding = s*(in-1) + output_padding +
    // ((k-1)*d + 1) - out; SAME_UPPER puts the smaller half first.
    if ((int64_t)outputShape.size() == n + 2)
      outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
    if ((int64_t)outputShape.size() != n)
      return g.error(node) << "output_shape needs " << n << " entries";
    for (int64_t i = 0; i < n; ++i) {
      int64_t total = w->strides[i] * (input.getDimSize(i + 2) - 1) +
                      outputPadding[i] + (w->kernel[i] - 1) * w->dilations[i] +
                      1 - outputShape[i];
      // Floor division, as the ONNX reference: a negative total (an output
      // larger than the strides produce) extends the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w->pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      w->pads[i + n] = autoPad == "SAME_UPPER" ? total - half : half;
    }
  }
  OpBuilder &b = g.builder();
  return g.bindResults(
      node,
      g.build<ConvTransposeOp>(node, x, weight, g.optionalOperand(node, 2),
                               b.getDenseI64ArrayAttr(w->strides),
                               b.getDenseI64ArrayAttr(w->pads),
                               b.getDenseI64ArrayAttr(w->dilations),
                               b.getDenseI64ArrayAttr(outputPadding),
                               b.getI64IntegerAttr(g.attrInt(node, "group"))));
}

LogicalResult convertMaxPool(GraphImporter &g, const Node &node) {
  if (g.used(node, 1))
    return g.error(node) << "unsupported variant: the Indices output is used";
  if (g.attrInt(node, "storage_order") != 0)
    return g.error(node) << "unsupported variant: column-major storage_order";
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  FailureOr<Window> w =
      readWindow(g, node, cast<RankedTensorType>(x.getType()), {});
  if (failed(w))
    return failure();
  OpBuilder &b = g.builder();
  return g.bindResults(
      node, g.build<MaxPoolOp>(node, x, b.getDenseI64ArrayAttr(w->kernel),
                               b.getDenseI64ArrayAttr(w->strides),
                               b.getDenseI64ArrayAttr(w->pads),
                               b.getDenseI64ArrayAttr(w->dilations),
                               b.getBoolAttr(g.attrInt(node, "ceil_mode"))));
}

LogicalResult convertAveragePool(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  FailureOr<Window> w =
      readWindow(g, node, cast<RankedTensorType>(x.getType()), {});
  if (failed(w))
    return failure();
  // AveragePool-19 adds dilations; weft's kernel is the dense window.
  if (llvm::any_of(w->dilations, [](int64_t d) { return d != 1; }))
    return g.error(node) << "unsupported variant: dilations other than 1";
  OpBuilder &b = g.builder();
  return g.bindResults(
      node,
      g.build<AvgPoolOp>(node, x, b.getDenseI64ArrayAttr(w->kernel),
                         b.getDenseI64ArrayAttr(w->strides),
                         b.getDenseI64ArrayAttr(w->pads),
                         b.getBoolAttr(g.attrInt(node, "ceil_mode")),
                         b.getBoolAttr(g.attrInt(node, "count_include_pad"))));
}

template <typename OpT>
LogicalResult convertLoss(GraphImporter &g, const Node &node) {
  Value scores = g.operand(node, 0), labels = g.operand(node, 1);
  if (!scores || !labels)
    return failure();
  OpBuilder &b = g.builder();
  const auto *ignore = g.attr(node, "ignore_index");
  Value weights = g.optionalOperand(node, 2);
  StringAttr reduction = b.getStringAttr(g.attrString(node, "reduction"));
  IntegerAttr ignoreIndex =
      ignore ? b.getI64IntegerAttr(ignore->i()) : IntegerAttr();
  auto build = [&](auto... extra) {
    return g.bindResults(node, g.build<OpT>(node, scores, labels, weights,
                                            reduction, ignoreIndex, extra...));
  };
  // The loss's type is the scores' (ONNX): no log_prob_type.
  if constexpr (std::is_same_v<OpT, SoftmaxCrossEntropyOp>)
    return build(TypeAttr());
  else
    return build();
}

} // namespace

void weft::registerNNConverters(ConverterMap &map) {
  map["MatMul"] = convertMatMul;
  map["Gemm"] = convertGemm;
  map["Softmax"] = convertSoftmax<SoftmaxOp>;
  map["LogSoftmax"] = convertSoftmax<LogSoftmaxOp>;
  map["LayerNormalization"] = convertLayerNorm;
  map["BatchNormalization"] = convertBatchNorm;
  map["RMSNormalization"] = convertRmsNorm;
  map["CumSum"] = convertCumSum;
  map["Dropout"] = convertDropout;
  map["ReduceSum"] = convertReduce<ReduceSumOp>;
  map["ReduceMean"] = convertReduce<ReduceMeanOp>;
  map["ReduceMax"] = convertReduce<ReduceMaxOp>;
  map["GlobalAveragePool"] = convertGlobalAveragePool;
  map["Conv"] = convertConv;
  map["ConvTranspose"] = convertConvTranspose;
  map["MaxPool"] = convertMaxPool;
  map["AveragePool"] = convertAveragePool;
  map["SoftmaxCrossEntropyLoss"] = convertLoss<SoftmaxCrossEntropyOp>;
  map["NegativeLogLikelihoodLoss"] = convertLoss<NllLossOp>;
}
