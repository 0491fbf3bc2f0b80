//===- NetworkSpecs.cpp - normalisation, dropout, conv, pooling, losses ---===//
//
// The output-shape rules of ONNX Softmax-13, LogSoftmax-13,
// LayerNormalization-17, BatchNormalization-15, Dropout-13, Conv-11,
// ConvTranspose-11, MaxPool-12, AveragePool-11, SoftmaxCrossEntropyLoss-13
// and NegativeLogLikelihoodLoss-13, as lib/Dialect/Weft/IR/WeftOps.cpp
// infers them; FLOPs as WeftCost.cpp counts them.
//
//===----------------------------------------------------------------------===//

#include "Specs.h"

#include <cmath>

namespace weft::rt::specs {

int64_t windowOutputSize(const SpecCall &call, int64_t in, int64_t kernel,
                         int64_t stride, int64_t padBegin, int64_t padEnd,
                         int64_t dilation, bool ceilMode) {
  int64_t extent = call.add(call.mul(kernel - 1, dilation), 1);
  int64_t span = call.add(call.add(in, padBegin), padEnd) - extent;
  if (span < 0)
    return 0;
  int64_t steps =
      ceilMode ? span / stride + (span % stride != 0) : span / stride;
  return steps + 1;
}

void checkWindow(const SpecCall &call, int64_t spatial,
                 const std::vector<int64_t> &strides,
                 const std::vector<int64_t> &pads,
                 const std::vector<int64_t> &dilations, bool negativePads) {
  if (int64_t(strides.size()) != spatial ||
      int64_t(pads.size()) != 2 * spatial ||
      (!dilations.empty() && int64_t(dilations.size()) != spatial))
    call.fail("expected " + std::to_string(spatial) +
              " strides/dilations and " + std::to_string(2 * spatial) +
              " pads for " + std::to_string(spatial) + " spatial dims");
  for (int64_t s : strides)
    if (s <= 0)
      call.fail("attribute 'strides' holds " + std::to_string(s));
  for (int64_t d : dilations)
    if (d <= 0)
      call.fail("attribute 'dilations' holds " + std::to_string(d));
  for (int64_t p : pads)
    if (p < 0 && (!negativePads || p == INT64_MIN))
      call.fail("attribute 'pads' holds " + std::to_string(p));
}

Types poolOutput(const SpecCall &call, bool ceilMode,
                 const std::vector<int64_t> &dilations) {
  const TensorType &x = call.in[0];
  const std::vector<int64_t> &kernel = call.attrs.ints("kernel_shape"),
                             &strides = call.attrs.ints("strides"),
                             &pads = call.attrs.ints("pads");
  int64_t spatial = x.rank() - 2;
  if (spatial < 1 || int64_t(kernel.size()) != spatial)
    call.fail("expects [N, C, D1..Dn] input and n kernel dims, got " +
              typeString(x) + " and " + std::to_string(kernel.size()) +
              " kernel dims");
  for (int64_t k : kernel)
    if (k <= 0)
      call.fail("attribute 'kernel_shape' holds " + std::to_string(k));
  checkWindow(call, spatial, strides, pads, dilations);
  std::vector<int64_t> shape(x.shape.begin(), x.shape.begin() + 2);
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutputSize(
        call, x.shape[i + 2], kernel[i], strides[i], pads[i], pads[i + spatial],
        dilations.empty() ? 1 : dilations[i], ceilMode));
  return {{x.dtype, shape}};
}

std::vector<int64_t> convOutputShape(const SpecCall &call,
                                     const TensorType &input,
                                     const std::vector<int64_t> &weight) {
  int64_t spatial = input.rank() - 2, group = call.attrs.i("group");
  if (spatial < 1 || int64_t(weight.size()) != input.rank())
    call.fail("expects X [N, C, D...] and W [M, C/group, k...] of equal "
              "rank, got " +
              typeString(input) + " and W " + shapeString(weight));
  if (group <= 0 || input.shape[1] != call.mul(weight[1], group) ||
      weight[0] % group != 0)
    call.fail("channels do not match: X " + typeString(input) + ", W " +
              shapeString(weight) + ", group " + std::to_string(group));
  const std::vector<int64_t> &strides = call.attrs.ints("strides"),
                             &pads = call.attrs.ints("pads"),
                             &dilations = call.attrs.ints("dilations");
  checkWindow(call, spatial, strides, pads, dilations);
  std::vector<int64_t> shape{input.shape[0], weight[0]};
  for (int64_t i = 0; i < spatial; ++i) {
    if (weight[i + 2] <= 0)
      call.fail("kernel dim " + std::to_string(i) + " is " +
                std::to_string(weight[i + 2]));
    shape.push_back(windowOutputSize(
        call, input.shape[i + 2], weight[i + 2], strides[i], pads[i],
        pads[i + spatial], dilations.empty() ? 1 : dilations[i], false));
  }
  return shape;
}

Types lossOutput(const SpecCall &call, size_t weightInput) {
  const TensorType &scores = call.in[0], &target = call.in[1];
  if (scores.rank() < 2 || target.rank() != scores.rank() - 1 ||
      target.shape[0] != scores.shape[0] ||
      !std::equal(target.shape.begin() + 1, target.shape.end(),
                  scores.shape.begin() + 2))
    call.fail("expects scores [N, C, d...] and target [N, d...], got " +
              typeString(scores) + " and " + typeString(target));
  // The kernels average over N x d... and index C classes.
  if (scores.shape[0] == 0 || scores.shape[1] == 0)
    call.fail("scores " + typeString(scores) + " hold no sample or no class");
  if (call.in.size() > weightInput)
    call.requireType(weightInput, {scores.dtype, {scores.shape[1]}},
                     "the class weights");
  const std::string &reduction = call.attrs.s("reduction");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    call.fail("attribute 'reduction' is '" + reduction +
              "', expected mean, sum or none");
  if (reduction == "none")
    return {{scores.dtype, target.shape}};
  return {{scores.dtype, {}}};
}

TensorType layerNormStats(const TensorType &x, int64_t axis) {
  std::vector<int64_t> shape(x.shape.begin(), x.shape.begin() + axis);
  shape.resize(x.rank(), 1);
  // f32, f64 beside f64 x: the float64 oracle's backward reads them.
  return {x.dtype == DType::F64 ? DType::F64 : DType::F32, shape};
}

TensorType rmsNormStats(const SpecCall &call) {
  const TensorType &x = call.in[0], &scale = call.in[1];
  int64_t axis = call.axis("axis", x.rank());
  call.requireSameDType(0, 1);
  std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  if (scale.shape != normalized)
    call.fail("scale " + typeString(scale) + " is not the normalised dims " +
              shapeString(normalized));
  TensorType stats = layerNormStats(x, axis);
  return stats;
}

void requireLayerNormAffine(const SpecCall &call, size_t k) {
  DType x = call.in[0].dtype, affine = call.in[k].dtype;
  if (affine != x && !widensHalf(x, affine))
    call.fail("input " + std::to_string(k) + " is " + dtypeName(affine) +
              ", expected " + dtypeName(x) + (isHalf(x) ? " or f32" : "") +
              " (the input's dtype)");
}

TensorType batchNormChannels(const SpecCall &call,
                             std::initializer_list<const char *> names) {
  const TensorType &x = call.in[0];
  if (x.rank() < 2)
    call.fail("input 0 " + typeString(x) + " is not [N, C, ...]");
  TensorType channel{x.dtype, {x.shape[1]}};
  size_t k = 1;
  for (const char *name : names)
    call.requireType(k++, channel, name);
  return channel;
}

/// A tensor-parallel dropout draws the mask elements of its shard of the
/// whole tensor: all four shard attributes or none, each in range.
void checkDropoutShard(const SpecCall &call,
                       const std::vector<int64_t> &shape) {
  const char *names[] = {"shard_dim", "shard_blocks", "shard_count",
                         "shard_index"};
  int present = 0;
  for (const char *name : names)
    present += call.attrs.has(name);
  if (present == 0)
    return;
  if (present != 4)
    call.fail("needs all of shard_dim, shard_blocks, shard_count and "
              "shard_index, or none");
  int64_t dim = call.attrs.i("shard_dim"),
          blocks = call.attrs.i("shard_blocks"),
          count = call.attrs.i("shard_count"),
          index = call.attrs.i("shard_index");
  if (dim < 0 || dim >= int64_t(shape.size()))
    call.fail("attribute 'shard_dim' is " + std::to_string(dim) +
              ", the input has rank " + std::to_string(shape.size()));
  if (blocks < 1 || count < 1 || index < 0 || index >= count ||
      shape[dim] % blocks)
    call.fail("shard_blocks " + std::to_string(blocks) + ", shard_count " +
              std::to_string(count) + ", shard_index " + std::to_string(index) +
              " do not describe a shard of " + std::to_string(shape[dim]) +
              " elements");
  // The whole tensor's element count must fit the mask counter's int64.
  satMul(product(shape), count);
}

namespace {

Types softmax(const SpecCall &call) {
  call.axis("axis", call.in[0].rank());
  return {call.in[0]};
}

/// scale_mask_softmax (scores, mask, fill) and scale_mask_softmax_grad
/// (output, grad, mask): scores of rank 2 or more; the mask [..., s_q, s_k]
/// of the scores' last two dims with every leading dim 1 (what the kernels
/// index: row r of the scores reads mask row r mod s_q); the fill a scalar
/// of the scores' dtype; a finite, non-zero divisor.
Types scaleMaskRows(const SpecCall &call, size_t maskAt) {
  const TensorType &x = call.in[0];
  const TensorType &mask = call.in[maskAt];
  if (x.rank() < 2)
    call.fail("the scores " + typeString(x) + " have fewer than 2 dims");
  bool fits = mask.rank() >= 2 && mask.rank() <= x.rank() &&
              mask.shape.end()[-1] == x.shape.end()[-1] &&
              mask.shape.end()[-2] == x.shape.end()[-2];
  for (int64_t d = 0; fits && d + 2 < mask.rank(); ++d)
    fits = mask.shape[d] == 1;
  if (!fits)
    call.fail("the mask " + typeString(mask) + " is not [..., " +
              std::to_string(x.shape.end()[-2]) + ", " +
              std::to_string(x.shape.end()[-1]) + "] with every leading dim 1");
  double divisor = call.attrs.f("divisor");
  if (!std::isfinite(divisor) || divisor == 0)
    call.fail("attribute 'divisor' is " + std::to_string(divisor) +
              ", expected finite and non-zero");
  return {x};
}

Types scaleMaskSoftmax(const SpecCall &call) {
  call.requireType(2, TensorType{call.in[0].dtype, {}}, "the fill value");
  return scaleMaskRows(call, 1);
}

Types scaleMaskSoftmaxGrad(const SpecCall &call) {
  call.requireType(1, call.in[0], "the output's gradient");
  return scaleMaskRows(call, 2);
}

/// LayerNormalization-17 of input 0 with scale and bias from input
/// `affine` on.
Types normalizeRows(const SpecCall &call, size_t affine) {
  const TensorType &x = call.in[0];
  int64_t axis = call.axis("axis", x.rank());
  std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  for (size_t k = affine; k < call.in.size(); ++k) {
    requireLayerNormAffine(call, k);
    if (call.broadcast(call.in[k].shape, normalized) != normalized)
      call.fail("input " + std::to_string(k) + " " + typeString(call.in[k]) +
                " does not broadcast to the normalised dims " +
                shapeString(normalized));
  }
  TensorType stats = layerNormStats(x, axis);
  return {x, stats, stats};
}

Types layerNorm(const SpecCall &call) { return normalizeRows(call, 1); }

/// rotary and rotary_grad (x or its gradient, cos, sin) -> x's type: the
/// tables one type of x's dtype broadcasting to x, the rotated dim (the
/// last, `axis`) even.
Types rotary(const SpecCall &call) {
  const TensorType &x = call.in[0], &cos = call.in[1];
  call.requireSameDType(0, 1);
  call.requireType(2, cos, "sin");
  if (x.rank() < 1 || call.attrs.i("axis") != x.rank() - 1)
    call.fail("attribute 'axis' is " + std::to_string(call.attrs.i("axis")) +
              ", expected the last dim of " + typeString(x));
  if (x.shape.back() % 2)
    call.fail("the rotated dim of " + typeString(x) + " is odd");
  if (call.broadcast(cos.shape, x.shape) != x.shape)
    call.fail("cos " + typeString(cos) + " does not broadcast to " +
              typeString(x));
  return {x};
}

/// RMSNormalization-23 (x, scale) -> (y, inv_rms).
Types rmsNorm(const SpecCall &call) {
  if (call.attrs.f("epsilon") < 0)
    call.fail("attribute 'epsilon' is " +
              std::to_string(call.attrs.f("epsilon")) + ", expected >= 0");
  return {call.in[0], rmsNormStats(call)};
}

/// (input, residual, scale, bias?): the sum, one type, is the fourth
/// output.
Types addLayerNorm(const SpecCall &call) {
  call.requireType(1, call.in[0], "the residual");
  Types out = normalizeRows(call, 2);
  out.push_back(call.in[0]);
  return out;
}

Types batchNorm(const SpecCall &call) {
  TensorType channel =
      batchNormChannels(call, {"scale", "bias", "mean", "var"});
  return {call.in[0], channel, channel};
}

int64_t batchNormFlops(const SpecCall &call, const Types &) {
  return satMul(call.attrs.b("training") ? 7 : 4, call.in[0].numel());
}

Types dropout(const SpecCall &call) {
  checkRatio(call);
  checkDropoutShard(call, call.in[0].shape);
  return {call.in[0], {DType::Bool, call.in[0].shape}};
}

int64_t dropoutFlops(const SpecCall &call, const Types &) {
  bool active = call.attrs.b("training") && call.attrs.f("ratio") > 0;
  return active ? satMul(2, call.in[0].numel()) : 0;
}

Types conv(const SpecCall &call) {
  call.requireSameDType(0, 1);
  const TensorType &x = call.in[0], &w = call.in[1];
  std::vector<int64_t> shape = convOutputShape(call, x, w.shape);
  if (call.in.size() > 2)
    call.requireType(2, {x.dtype, {w.shape[0]}}, "the bias");
  return {{x.dtype, shape}};
}

int64_t convFlops(const SpecCall &call, const Types &out) {
  // Each output element: (C/group) * prod(kernel) multiply-adds.
  const std::vector<int64_t> &w = call.in[1].shape;
  int64_t macs = satMul(w[1], product({w.begin() + 2, w.end()}));
  int64_t outputs = out[0].numel();
  return satMul(2, satMul(outputs, macs)) + (call.in.size() > 2 ? outputs : 0);
}

Types convTranspose(const SpecCall &call) {
  call.requireSameDType(0, 1);
  const TensorType &x = call.in[0], &w = call.in[1];
  int64_t spatial = x.rank() - 2, group = call.attrs.i("group");
  if (spatial < 1 || w.rank() != x.rank() || group <= 0 ||
      x.shape[1] != w.shape[0] || x.shape[1] % group != 0)
    call.fail("expects X [N, C, D...] and W [C, M/group, k...], got " +
              typeString(x) + " and " + typeString(w));
  int64_t outChannels = call.mul(w.shape[1], group);
  if (call.in.size() > 2)
    call.requireType(2, {x.dtype, {outChannels}}, "the bias");
  const std::vector<int64_t> &strides = call.attrs.ints("strides"),
                             &pads = call.attrs.ints("pads"),
                             &dilations = call.attrs.ints("dilations"),
                             &outputPadding = call.attrs.ints("output_padding");
  checkWindow(call, spatial, strides, pads, dilations, /*negativePads=*/true);
  if (int64_t(outputPadding.size()) != spatial)
    call.fail("attribute 'output_padding' needs " + std::to_string(spatial) +
              " entries");
  std::vector<int64_t> shape{x.shape[0], outChannels};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t dilation = dilations.empty() ? 1 : dilations[i];
    if (w.shape[i + 2] <= 0 || outputPadding[i] < 0)
      call.fail("kernel dim or output_padding of dim " + std::to_string(i) +
                " is not positive");
    // stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pads.
    int64_t d = call.mul(strides[i], x.shape[i + 2] - 1);
    d = call.add(d, outputPadding[i]);
    d = call.add(d, call.add(call.mul(w.shape[i + 2] - 1, dilation), 1));
    d = call.add(call.add(d, -pads[i]), -pads[i + spatial]);
    if (d <= 0)
      call.fail("output dim " + std::to_string(i) + " is not positive");
    shape.push_back(d);
  }
  return {{x.dtype, shape}};
}

int64_t convTransposeFlops(const SpecCall &call, const Types &out) {
  // Each input element scatters into (M/group) * prod(kernel) outputs.
  const std::vector<int64_t> &w = call.in[1].shape;
  int64_t macs = satMul(w[1], product({w.begin() + 2, w.end()}));
  return satMul(2, satMul(call.in[0].numel(), macs)) +
         (call.in.size() > 2 ? out[0].numel() : 0);
}

Types maxPool(const SpecCall &call) {
  return poolOutput(call, call.attrs.b("ceil_mode"),
                    call.attrs.ints("dilations"));
}

Types avgPool(const SpecCall &call) {
  return poolOutput(call, call.attrs.b("ceil_mode"), {});
}

int64_t poolFlops(const SpecCall &call, const Types &out) {
  return satMul(out[0].numel(), product(call.attrs.ints("kernel_shape")));
}

/// softmax_cross_entropy's (loss, log_prob), or with `logSumExp` (loss,
/// log_sum_exp [N, d...]), of inputs (scores, labels, ...) whose class
/// weights, if any, are input `weightInput`.
Types crossEntropyOutputs(const SpecCall &call, size_t weightInput,
                          bool logSumExp) {
  Types out = lossOutput(call, weightInput);
  if (logSumExp)
    out.push_back({call.in[0].dtype, call.in[1].shape});
  else
    out.push_back(call.in[0]);
  // log_prob_type: f32 loss and log_prob beside 16-bit scores.
  if (call.attrs.has("log_prob_type")) {
    DType scores = call.in[0].dtype,
          type = parseDType(call.attrs.s("log_prob_type"));
    if (type != scores &&
        !(widensHalf(scores, type) && call.in.size() == weightInput))
      call.fail("attribute 'log_prob_type' is " +
                call.attrs.s("log_prob_type") + ", expected " +
                dtypeName(scores) +
                ", or f32 beside 16-bit scores without "
                "class weights");
    for (TensorType &t : out)
      t.dtype = type;
  }
  return out;
}

Types softmaxCrossEntropy(const SpecCall &call) {
  return crossEntropyOutputs(call, 2, call.attrs.flag("log_sum_exp"));
}

/// softmax_cross_entropy_and_grad (scores, labels, grad, weights?) ->
/// (loss, log_sum_exp, scores_grad): the forward's outputs with
/// log_sum_exp, then the scores' gradient (over the scores, when the plan
/// says so); grad is d step / d loss, of the loss's type.
Types softmaxCrossEntropyAndGrad(const SpecCall &call) {
  Types out = crossEntropyOutputs(call, 3, true);
  call.requireType(2, out[0], "the loss's gradient");
  out.push_back(call.in[0]);
  return out;
}

Types nllLoss(const SpecCall &call) { return lossOutput(call, 2); }

} // namespace

void addNetworkSpecs(std::vector<KernelSpec> &t) {
  for (auto [name, source] : {std::pair{Op::Softmax, "Softmax-13"},
                              {Op::LogSoftmax, "LogSoftmax-13"}})
    t.push_back(
        {.op = name, .source = source, .infer = softmax, .flops = fromRecord});
  t.push_back({.op = Op::LayerNorm,
               .source = "LayerNormalization-17",
               .infer = layerNorm,
               .flops = fromRecord,
               .dtypeNote =
                   "scale, bias alike or f32 beside 16-bit x; statistics f32"});
  t.push_back({.op = Op::Rotary,
               .source = "RotaryEmbedding-23's rotation (Su et al. 2021)",
               .infer = rotary,
               .flops = fromRecord,
               .dtypeNote = "alike"});
  t.push_back({.op = Op::RotaryGrad,
               .source = "rotary adjoint",
               .infer = rotary,
               .flops = fromRecord,
               .dtypeNote = "alike"});
  t.push_back({.op = Op::RmsNorm,
               .source = "RMSNormalization-23 (Zhang & Sennrich 2019)",
               .infer = rmsNorm,
               .flops = fromRecord,
               .dtypeNote = "scale alike; inv_rms f32 (f64 beside f64)"});
  t.push_back(
      {.op = Op::AddLayerNorm,
       .source = "weft.add_layer_norm: Add-14, then "
                 "LayerNormalization-17 of the sum",
       .infer = addLayerNorm,
       .flops = fromRecord,
       .dtypeNote = "as layer_norm; the residual and the sum as the input"});
  t.push_back({.op = Op::ScaleMaskSoftmax,
               .source = "weft.scale_mask_softmax: Div-14, Where-16, then "
                         "Softmax-13 (Megatron-LM's FusedScaleMaskSoftmax)",
               .infer = scaleMaskSoftmax,
               .flops = fromRecord,
               .dtypeNote = "mask bool; fill a scalar"});
  t.push_back({.op = Op::ScaleMaskSoftmaxGrad,
               .source = "scale_mask_softmax adjoint, from the output",
               .infer = scaleMaskSoftmaxGrad,
               .flops = fromRecord,
               .dtypeNote = "mask bool"});
  // Running statistics update their state buffers in place when the
  // compiler placed them there (training), or go to fresh buffers.
  t.push_back({.op = Op::BatchNorm,
               .source = "BatchNormalization-15",
               .infer = batchNorm,
               .flops = batchNormFlops});
  t.push_back({.op = Op::Dropout,
               .source = "Dropout-13",
               .infer = dropout,
               .flops = dropoutFlops,
               .dtypeNote = "output mask bool"});
  t.push_back(
      {.op = Op::Conv, .source = "Conv-11", .infer = conv, .flops = convFlops});
  t.push_back({.op = Op::ConvTranspose,
               .source = "ConvTranspose-11",
               .infer = convTranspose,
               .flops = convTransposeFlops});
  t.push_back({.op = Op::MaxPool,
               .source = "MaxPool-12",
               .infer = maxPool,
               .flops = poolFlops});
  t.push_back({.op = Op::AvgPool,
               .source = "AveragePool-11",
               .infer = avgPool,
               .flops = poolFlops});
  t.push_back({.op = Op::SoftmaxCrossEntropy,
               .source = "SoftmaxCrossEntropyLoss-13",
               .infer = softmaxCrossEntropy,
               .flops = fromRecord,
               .dtypeNote = "16-bit scores: loss and log_prob (or log_sum_exp) "
                            "f32 with log_prob_type"});
  t.push_back({.op = Op::SoftmaxCrossEntropyAndGrad,
               .source = "weft.softmax_cross_entropy_and_grad: "
                         "SoftmaxCrossEntropyLoss-13 and its adjoint",
               .infer = softmaxCrossEntropyAndGrad,
               .flops = fromRecord,
               .dtypeNote = "as softmax_cross_entropy {log_sum_exp}; grad as "
                            "the loss; the scores' gradient as the scores"});
  t.push_back({.op = Op::NllLoss,
               .source = "NegativeLogLikelihoodLoss-13",
               .infer = nllLoss,
               .flops = [](const SpecCall &call, const Types &) {
                 return satMul(2, call.in[1].numel());
               }});
}

} // namespace weft::rt::specs
