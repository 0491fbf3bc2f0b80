//===- BackwardSpecs.cpp - gradient kernels and optimizer updates ---------===//
//
// The backward-only ops of lib/Dialect/Weft/IR/WeftGradOps.td (each the
// adjoint of the forward kernel it names) and the optimizer updates of
// WeftOptimizerOps.td: torch.optim.AdamW (Loshchilov & Hutter, ICLR 2019)
// and torch.optim.SGD, which update the parameter and their state in place.
//
//===----------------------------------------------------------------------===//

#include "Specs.h"

#include <utility>

namespace weft::rt::specs {

namespace {

KernelSpec activationGrad(Op name, const char *source,
                          int64_t (*flops)(const SpecCall &, const Types &),
                          std::vector<AttrSpec> attrs = {}) {
  return {.op = name, .source = source, .infer = inputGrad, .flops = flops};
}

Types softmaxGrad(const SpecCall &call) {
  Types out = inputGrad(call);
  call.axis("axis", call.in[0].rank());
  return out;
}

Types layerNormGrad(const SpecCall &call) {
  // (input, scale, mean, inv_std_dev, grad[, accumulate]): the kernel
  // indexes scale over the normalised dims as a flat vector.
  const TensorType &x = call.in[0], &scale = call.in[1];
  requireLayerNormAffine(call, 1);
  int64_t axis = call.axis("axis", x.rank());
  std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  if (call.broadcast(scale.shape, normalized) != normalized ||
      scale.numel() != product(normalized))
    call.fail("scale " + typeString(scale) +
              " does not cover the normalised dims " + shapeString(normalized));
  call.requireType(2, layerNormStats(x, axis), "the mean");
  call.requireType(3, layerNormStats(x, axis), "the inverse std dev");
  call.requireType(4, x, "the gradient");
  // accumulate, added into the input's gradient.
  if (call.in.size() > 5)
    call.requireType(5, x, "the accumulated gradient");
  return {x, scale, scale};
}

/// glu_grad (gate, up, grad) -> (dgate, dup), one type.
Types gluGrad(const SpecCall &call) {
  TensorType gate = gluOperands(call);
  call.requireType(2, gate, "the gradient");
  return {gate, gate};
}

/// (input, scale, inv_rms, grad) -> (dx, dscale).
Types rmsNormGrad(const SpecCall &call) {
  call.requireType(2, rmsNormStats(call), "the inverse rms");
  call.requireType(3, call.in[0], "the gradient");
  return {call.in[0], call.in[1]};
}

/// 12 FLOPs per element of the input; 13 with accumulate (its add).
int64_t layerNormGradFlops(const SpecCall &call, const Types &) {
  return satMul(call.in.size() > 5 ? 13 : 12, call.in[0].numel());
}

/// wgrad_bias (grad [M, N], input [M, K], weight_sum?, bias_sum?) ->
/// ([N, K], or [K, N] when transposed; [N]), one dtype; with the sums
/// (both, of the outputs' types) the outputs are them plus the gradients,
/// in place.
Types wgradBias(const SpecCall &call) {
  const TensorType &grad = call.in[0], &input = call.in[1];
  call.requireSameDType(0, 1);
  if (grad.rank() != 2 || input.rank() != 2 || grad.shape[0] != input.shape[0])
    call.fail("expects grad [M, N] and input [M, K], got " + typeString(grad) +
              " and " + typeString(input));
  std::vector<int64_t> weight = {grad.shape[1], input.shape[1]};
  if (call.attrs.flag("transposed"))
    std::swap(weight[0], weight[1]);
  Types out = {{grad.dtype, weight}, {grad.dtype, {grad.shape[1]}}};
  if (call.in.size() == 3)
    call.fail("takes the weight's and the bias's sums to accumulate into, "
              "or neither");
  if (call.in.size() == 4) {
    call.requireType(2, out[0], "the weight gradient's sum");
    call.requireType(3, out[1], "the bias gradient's sum");
  }
  return out;
}

/// 2 M N K for the GEMM, M N for the sums; N K + N for the accumulation.
int64_t wgradBiasFlops(const SpecCall &call, const Types &out) {
  int64_t mn = call.in[0].numel();
  int64_t flops = satMul(mn, satMul(2, call.in[1].shape[1]) + 1);
  if (call.in.size() < 4)
    return flops;
  return satAdd(flops, satAdd(out[0].numel(), out[1].numel()));
}

Types dropoutGrad(const SpecCall &call) {
  call.requireType(1, {DType::Bool, call.in[0].shape}, "the mask");
  checkRatio(call);
  return {call.in[0]};
}

Types gatherGrad(const SpecCall &call) {
  const TensorType &grad = call.in[0], &indices = call.in[1];
  const std::vector<int64_t> &data = call.attrs.ints("shape");
  int64_t axis = call.axis("axis", data.size());
  for (int64_t d : data)
    if (d < 0)
      call.fail("attribute 'shape' " + shapeString(data) +
                " has a negative dim");
  // grad is what gather produced: data[:axis] + indices + data[axis+1:].
  std::vector<int64_t> gathered(data.begin(), data.begin() + axis);
  gathered.insert(gathered.end(), indices.shape.begin(), indices.shape.end());
  gathered.insert(gathered.end(), data.begin() + axis + 1, data.end());
  call.requireType(0, {grad.dtype, gathered}, "the gradient");
  Types out = {{grad.dtype, data}};
  if (call.in.size() == 3)
    call.requireType(2, out[0], "the sum to accumulate into");
  return out;
}

/// (scores or log_prob, labels, grad, weights?): grad has the loss's type.
Types lossGrad(const SpecCall &call) {
  Types loss = lossOutput(call, 3);
  call.requireType(2, loss[0], "the loss gradient");
  if (!call.attrs.has("grad_type"))
    return {call.in[0]};
  // softmax_cross_entropy_grad of widened 16-bit scores (the forward's
  // log_prob_type): f32 log_prob in, the scores' 16 bits out.
  DType logProb = call.in[0].dtype,
        type = parseDType(call.attrs.s("grad_type"));
  if (type != logProb && !(widensHalf(type, logProb) && call.in.size() == 3))
    call.fail("attribute 'grad_type' is " + call.attrs.s("grad_type") +
              ", expected " + dtypeName(logProb) +
              ", or f16 or bf16 beside f32 log_prob without class weights");
  return {{type, call.in[0].shape}};
}

/// softmax_cross_entropy_grad: (log_prob, labels, grad, weights?), or
/// with log_sum_exp (scores, labels, grad, weights?, log_sum_exp): the
/// log-sum-exp [N, d...] and the loss gradient of the scores' dtype, or
/// f32 beside 16-bit scores (the forward's log_prob_type); the gradient
/// of the scores' own.
Types crossEntropyGrad(const SpecCall &call) {
  if (!call.attrs.flag("log_sum_exp")) {
    if (call.in.size() > 4)
      call.fail("takes 3 or 4 inputs without attribute 'log_sum_exp', got " +
                std::to_string(call.in.size()));
    return lossGrad(call);
  }
  if (call.in.size() < 4)
    call.fail("attribute 'log_sum_exp' needs the log-sum-exp as the last "
              "input");
  if (call.attrs.has("grad_type"))
    call.fail("attribute 'grad_type' is for a log_prob input: with "
              "'log_sum_exp' the gradient has the scores' dtype");
  std::vector<TensorType> rest(call.in.begin(), call.in.end() - 1);
  Types loss = lossOutput(SpecCall{rest, call.attrs}, 3);
  const TensorType &scores = call.in[0], &lse = call.in.back();
  if (lse.shape != call.in[1].shape ||
      (lse.dtype != scores.dtype && !widensHalf(scores.dtype, lse.dtype)))
    call.fail("the log-sum-exp is " + typeString(lse) + ", expected " +
              shapeString(call.in[1].shape) + " " + dtypeName(scores.dtype) +
              " (f32 beside 16-bit scores)");
  call.requireType(2, {lse.dtype, loss[0].shape}, "the loss gradient");
  return {scores};
}

/// 3 FLOPs per element of log_prob; from the scores, 4 (the subtraction).
int64_t crossEntropyGradFlops(const SpecCall &call, const Types &) {
  return satMul(call.attrs.flag("log_sum_exp") ? 4 : 3, call.in[0].numel());
}

Types convWeightGrad(const SpecCall &call) {
  const TensorType &x = call.in[0], &dy = call.in[1];
  call.requireSameDType(0, 1);
  int64_t group = call.attrs.i("group");
  const std::vector<int64_t> &kernel = call.attrs.ints("kernel_shape");
  if (x.rank() < 3 || dy.rank() != x.rank() || group <= 0 ||
      x.shape[1] % group != 0 || int64_t(kernel.size()) != x.rank() - 2)
    call.fail("expects X [N, C, D...], dY [N, M, E...] and " +
              std::to_string(x.rank() - 2) + " kernel dims, got " +
              typeString(x) + ", " + typeString(dy) + " and " +
              std::to_string(kernel.size()));
  std::vector<int64_t> weight{dy.shape[1], x.shape[1] / group};
  weight.insert(weight.end(), kernel.begin(), kernel.end());
  // dY must be what conv(X, W) produced with these window attributes.
  call.requireType(1, {x.dtype, convOutputShape(call, x, weight)},
                   "the output gradient");
  return {{x.dtype, weight}};
}

int64_t convWeightGradFlops(const SpecCall &call, const Types &out) {
  // Per output position: M * (C/g) * prod(k) multiply-adds (per group).
  int64_t m = out[0].shape[0];
  return m ? satMul(2, satMul(call.in[1].numel(), out[0].numel() / m)) : 0;
}

Types batchNormGrad(const SpecCall &call) {
  // (input, scale, mean, var, grad)
  TensorType channel = batchNormChannels(call, {"scale", "mean", "var"});
  call.requireType(4, call.in[0], "the gradient");
  return {call.in[0], channel, channel};
}

/// (input, grad): grad is the pooling output for either ceil mode (the
/// gradient op does not carry it).
Types poolGrad(const SpecCall &call, const std::vector<int64_t> &dilations) {
  call.requireSameDType(0, 1);
  Types floor = poolOutput(call, false, dilations),
        ceil = poolOutput(call, true, dilations);
  if (call.in[1] != floor[0] && call.in[1] != ceil[0])
    call.fail("input 1 (the gradient) is " + typeString(call.in[1]) +
              ", the pooling writes " + typeString(floor[0]));
  return {call.in[0]};
}

int64_t poolGradFlops(const SpecCall &call, const Types &) {
  return satMul(call.in[1].numel(), product(call.attrs.ints("kernel_shape")));
}

Types resizeGrad(const SpecCall &call) {
  const TensorType &x = call.in[0], &dy = call.in[1];
  call.requireSameDType(0, 1);
  checkResizeModes(call, x.rank());
  if (dy.rank() != x.rank() || (dy.numel() > 0 && x.numel() == 0))
    call.fail("gradient " + typeString(dy) + " is not a resize of " +
              typeString(x));
  return {x};
}

/// The type of an update's state: the master's (input `master`, f32 beside
/// an f16/bf16 parameter: mixed precision) when there is one, else the
/// parameter's. Checks the gradient and the master.
TensorType updateState(const SpecCall &call, bool master, size_t at) {
  call.requireType(1, call.in[0], "the gradient");
  if (!master)
    return call.in[0];
  TensorType state{DType::F32, call.in[0].shape};
  if (call.in[0].dtype != DType::F16 && call.in[0].dtype != DType::BF16)
    call.fail("a master copy (input " + std::to_string(at) +
              ") needs an f16 or bf16 parameter, not " +
              dtypeName(call.in[0].dtype));
  call.requireType(at, state, "the f32 master copy");
  return state;
}

/// The loss scaler (f32 [scale, growth_tracker, skipped_steps]) and
/// found_inf (f32 scalar) at inputs `at`, `at + 1`.
void requireScaler(const SpecCall &call, size_t at) {
  call.requireType(at, {DType::F32, {3}}, "the loss scaler");
  call.requireType(at + 1, {DType::F32, {}}, "found_inf");
}

Types adamw(const SpecCall &call) {
  // (param, grad, exp_avg, exp_avg_sq), then master, then (scaler,
  // found_inf): 4, 5, 6 or 7 inputs.
  size_t n = call.in.size();
  bool master = n == 5 || n == 7;
  TensorType state = updateState(call, master, 4);
  for (size_t k = 2; k < 4; ++k)
    call.requireType(k, state, "an AdamW moment");
  if (n >= 6)
    requireScaler(call, n - 2);
  Types out{call.in[0], state, state};
  if (master)
    out.push_back(state);
  return out;
}

Types sgd(const SpecCall &call) {
  // (param, grad, momentum_buffer?), then master, then (scaler,
  // found_inf): a buffer exactly when momentum != 0.
  bool buffer = call.attrs.f("momentum") != 0.0;
  size_t plain = buffer ? 3 : 2;
  if (call.in.size() < plain)
    call.fail("a momentum buffer is needed exactly when momentum != 0");
  size_t extra = call.in.size() - plain;
  bool master = extra == 1 || extra == 3;
  TensorType state = updateState(call, master, plain);
  if (buffer)
    call.requireType(2, state, "the momentum buffer");
  if (extra >= 2)
    requireScaler(call, call.in.size() - 2);
  Types out{call.in[0]};
  out.resize(1 + (buffer ? 1 : 0) + (master ? 1 : 0), state);
  return out;
}

Types foundInf(const SpecCall &call) { return {{DType::F32, {}}}; }

Types updateLossScale(const SpecCall &call) {
  requireScaler(call, 0);
  // Written so that a NaN factor fails too.
  double growth = call.attrs.f("growth_factor"),
         backoff = call.attrs.f("backoff_factor");
  bool valid = call.attrs.i("growth_interval") >= 1 && growth > 1 &&
               backoff > 0 && backoff < 1;
  if (!valid)
    call.fail("needs growth_interval >= 1, growth_factor > 1 and "
              "backoff_factor in (0, 1)");
  return {call.in[0]};
}

Types assign(const SpecCall &call) {
  // (dest, value): one type; the output is dest's bytes.
  call.requireType(1, call.in[0], "the assigned value");
  return {call.in[0]};
}

} // namespace

void addBackwardSpecs(std::vector<KernelSpec> &t) {
  t.push_back(activationGrad(Op::ReluGrad, "Relu-14 adjoint", fromRecord));
  t.push_back(activationGrad(Op::GeluGrad, "gelu adjoint", fromRecord));
  t.push_back(
      activationGrad(Op::GeluTanhGrad, "gelu_tanh adjoint", fromRecord));
  t.push_back(activationGrad(
      Op::ClipGrad, "Clip-13 adjoint", fromRecord,
      {{"min", AttrKind::Float, false}, {"max", AttrKind::Float, false}}));
  for (auto [name, source] :
       {std::pair{Op::SoftmaxGrad, "Softmax-13 adjoint, from the output"},
        {Op::LogSoftmaxGrad, "LogSoftmax-13 adjoint, from the output"}})
    t.push_back({.op = name,
                 .source = source,
                 .infer = softmaxGrad,
                 .flops = fromRecord});
  t.push_back({.op = Op::LayerNormGrad,
               .source = "LayerNormalization-17 adjoint",
               .infer = layerNormGrad,
               .flops = layerNormGradFlops,
               .dtypeNote = "scale alike or f32 beside 16-bit x (its gradients "
                            "too); statistics f32; accumulate as x"});
  t.push_back({.op = Op::GluGrad,
               .source = "glu adjoint",
               .infer = gluGrad,
               .flops = [](const SpecCall &c,
                           const Types &) { return gluFlops(c, true); },
               .dtypeNote = "alike"});
  t.push_back({.op = Op::RmsNormGrad,
               .source = "RMSNormalization-23 adjoint",
               .infer = rmsNormGrad,
               .flops = fromRecord,
               .dtypeNote = "scale alike; inv_rms f32 (f64 beside f64)"});
  t.push_back({.op = Op::WgradBias,
               .source = "a Linear layer's weight and bias gradients "
                         "(weft-fold-bias-grad)",
               .infer = wgradBias,
               .flops = wgradBiasFlops,
               .dtypeNote = "16-bit: the sums in f32 or wider; accumulates "
                            "into inputs 2, 3 when given"});
  t.push_back({.op = Op::DropoutGrad,
               .source = "Dropout-13 adjoint",
               .infer = dropoutGrad,
               .flops = fromRecord});
  t.push_back({.op = Op::GatherGrad,
               .source = "Gather-13 adjoint (scatter-add)",
               .infer = gatherGrad,
               .flops = scatterAddFlops,
               .dtypeNote = "accumulates into input 2 when given"});
  t.push_back({.op = Op::SoftmaxCrossEntropyGrad,
               .source = "SoftmaxCrossEntropyLoss-13 adjoint",
               .infer = crossEntropyGrad,
               .flops = crossEntropyGradFlops,
               .dtypeNote = "grad_type: a 16-bit gradient of f32 log_prob; "
                            "log_sum_exp: f32 beside 16-bit scores"});
  t.push_back({.op = Op::NllLossGrad,
               .source = "NegativeLogLikelihoodLoss-13 adjoint",
               .infer = lossGrad,
               .flops = fromRecord});
  t.push_back({.op = Op::ConvWeightGrad,
               .source = "Conv-11 adjoint w.r.t. the weight",
               .infer = convWeightGrad,
               .flops = convWeightGradFlops});
  t.push_back({.op = Op::BatchNormGrad,
               .source = "BatchNormalization-15 adjoint",
               .infer = batchNormGrad,
               .flops = fromRecord});
  t.push_back({.op = Op::MaxPoolGrad,
               .source = "MaxPool-12 adjoint",
               .infer =
                   [](const SpecCall &call) {
                     return poolGrad(call, call.attrs.ints("dilations"));
                   },
               .flops = poolGradFlops});
  t.push_back({.op = Op::AvgPoolGrad,
               .source = "AveragePool-11 adjoint",
               .infer = [](const SpecCall &call) { return poolGrad(call, {}); },
               .flops = poolGradFlops});
  t.push_back({.op = Op::ResizeGrad,
               .source = "Resize-13 (nearest) adjoint",
               .infer = resizeGrad,
               .flops = [](const SpecCall &call, const Types &) {
                 return call.in[1].numel();
               }});
  t.push_back({.op = Op::AdamW,
               .source = "torch.optim.AdamW step",
               .infer = adamw,
               .flops = fromRecord});
  t.push_back({.op = Op::SGD,
               .source = "torch.optim.SGD step",
               .infer = sgd,
               .flops = fromRecord});
  t.push_back({.op = Op::FoundInf,
               .source = "GradScaler's non-finite check (torch.amp)",
               .infer = foundInf,
               .flops =
                   [](const SpecCall &call, const Types &) {
                     // One comparison per element of every gradient.
                     int64_t n = 0;
                     for (const TensorType &t : call.in)
                       n = satAdd(n, t.numel());
                     return n;
                   },
               .dtypeNote = "output f32"});
  t.push_back({.op = Op::UpdateLossScale,
               .source = "GradScaler.update (torch.amp _amp_update_scale_)",
               .infer = updateLossScale,
               .flops = [](const SpecCall &, const Types &) -> int64_t {
                 // The scale's back-off or growth and the counters'
                 // updates: a few scalar operations.
                 return 4;
               }});
  t.push_back({.op = Op::Assign,
               .source = "ZeRO: a gathered parameter written back in place",
               .infer = assign,
               .flops = fromRecord});
}

} // namespace weft::rt::specs
