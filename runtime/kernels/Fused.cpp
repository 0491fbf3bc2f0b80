//===- Fused.cpp - the CPU's fused kernels as their parts -----------------===//

#include "Fused.h"

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace weft::rt {

namespace {

/// `t`'s dtype and shape in host bytes of their own, kept in `bytes`: an
/// accumulating kernel's own part, apart from the sum it is then added
/// to (written whole by the part that fills it: no fill). Host memory:
/// these forms are the CPU's parts only (Fused.h).
Tensor apart(const Tensor &t, std::unique_ptr<std::byte[]> &bytes) {
  bytes = std::make_unique_for_overwrite<std::byte[]>(t.bytes());
  return {bytes.get(), t.dtype, t.shape};
}

/// add_layer_norm (input, residual, scale, bias?) -> (y, mean, inv_std_dev,
/// sum): add into `sum`, rounded to its dtype, then layer_norm of it.
void addLayerNorm(const KernelCall &call, const PartLauncher &launch) {
  KernelAttrs none;
  const Tensor &sum = call.out[3];
  launch({"add", {call.in[0], call.in[1]}, {sum}, none, call.ctx});
  std::vector<Tensor> in{sum};
  in.insert(in.end(), call.in.begin() + 2, call.in.end());
  launch({"layer_norm",
          std::move(in),
          {call.out[0], call.out[1], call.out[2]},
          call.attrs,
          call.ctx});
}

/// wgrad_bias (dY [M, N], X [M, K], W_sum?, b_sum?) -> (dY^T X, or X^T dY
/// when transposed; dY's column sums): the gemm {transA} and the
/// reduce_sum {axes = [0]} weft-fold-bias-grad replaced. With the sums
/// (weft-fold-grad-accumulation), those into buffers of the outputs'
/// dtypes, then the adds it replaced, into the outputs (the sums' bytes).
void wgradBias(const KernelCall &call, const PartLauncher &launch) {
  const bool accumulate = call.in.size() == 4;
  // The micro-batch's own gradients, apart from the sums.
  std::unique_ptr<std::byte[]> weightBytes, biasBytes;
  Tensor weight = accumulate ? apart(call.out[0], weightBytes) : call.out[0];
  Tensor bias = accumulate ? apart(call.out[1], biasBytes) : call.out[1];
  KernelAttrs gemm;
  gemm.set("transA", true);
  gemm.set("transB", false);
  gemm.set("alpha", 1.0);
  gemm.set("beta", 0.0);
  std::vector<Tensor> operands = {call.in[0], call.in[1]};
  if (call.flag("transposed"))
    std::swap(operands[0], operands[1]);
  launch({"gemm", std::move(operands), {weight}, gemm, call.ctx});
  KernelAttrs rows;
  rows.set("axes", std::vector<int64_t>{0});
  rows.set("keepdims", false);
  launch({"reduce_sum", {call.in[0]}, {bias}, rows, call.ctx});
  if (!accumulate)
    return;
  KernelAttrs none;
  launch({"add", {call.in[2], weight}, {call.out[0]}, none, call.ctx});
  launch({"add", {call.in[3], bias}, {call.out[1]}, none, call.ctx});
}

/// gather_grad or vocab_parallel_gather_grad (dY, indices, sum) -> sum +
/// the scatter-add of (dY, indices), over the sum's bytes
/// (weft-fold-gather-grad-add): the scatter-add into a table of its own
/// (it fills it), rounded to its dtype, then the add it replaced.
void scatterAddInto(const KernelCall &call, const PartLauncher &launch) {
  std::unique_ptr<std::byte[]> bytes;
  Tensor table = apart(call.out[0], bytes);
  launch(
      {call.kernel, {call.in[0], call.in[1]}, {table}, call.attrs, call.ctx});
  KernelAttrs none;
  launch({"add", {call.in[2], table}, {call.out[0]}, none, call.ctx});
}

/// gemm_gelu_tanh (A, B, C?) -> (gelu_tanh(Y), Y): the gemm into the
/// pre-activation, then the GELU of it.
void gemmGeluTanh(const KernelCall &call, const PartLauncher &launch) {
  const Tensor &pre = call.out[1];
  launch({"gemm", call.in, {pre}, call.attrs, call.ctx});
  KernelAttrs none;
  launch({"gelu_tanh", {pre}, {call.out[0]}, none, call.ctx});
}

/// gemm_gelu_tanh_grad (A, B, pre) -> gelu_tanh_grad(pre, gemm(A, B)): the
/// gemm's output, the gradient reaching the GELU, into the output (rounded
/// to its dtype as the unfused plan's), then the GELU's gradient over it in
/// place (each element read before it is written).
void gemmGeluTanhGrad(const KernelCall &call, const PartLauncher &launch) {
  const Tensor &out = call.out[0];
  KernelAttrs product = call.attrs; // no C: beta is moot, but gemm's
  product.set("beta", 0.0);
  launch({"gemm", {call.in[0], call.in[1]}, {out}, product, call.ctx});
  KernelAttrs none;
  launch({"gelu_tanh_grad", {call.in[2], out}, {out}, none, call.ctx});
}

/// softmax_cross_entropy_and_grad (scores, labels, grad, weights?) ->
/// (loss, log_sum_exp, scores_grad): softmax_cross_entropy {log_sum_exp},
/// then softmax_cross_entropy_grad from that log-sum-exp, which reads each
/// score before it writes its gradient (over it, where the plan puts it).
void softmaxCrossEntropyAndGrad(const KernelCall &call,
                                const PartLauncher &launch) {
  const bool weights = call.in.size() > 3;
  KernelAttrs forward = call.attrs;
  forward.set("log_sum_exp", true);
  std::vector<Tensor> in{call.in[0], call.in[1]};
  if (weights)
    in.push_back(call.in[3]);
  launch({"softmax_cross_entropy",
          in,
          {call.out[0], call.out[1]},
          forward,
          call.ctx});
  KernelAttrs backward;
  backward.set("reduction", call.s("reduction"));
  if (call.has("ignore_index"))
    backward.set("ignore_index", call.i("ignore_index"));
  backward.set("log_sum_exp", true);
  in.insert(in.begin() + 2, call.in[2]);
  in.push_back(call.out[1]);
  launch({"softmax_cross_entropy_grad",
          std::move(in),
          {call.out[2]},
          backward,
          call.ctx});
}

/// A rank-0 tensor of `dtype` holding `value`, in host bytes of its own:
/// a fused op's literal (a divisor, the select's 0), which the op's .td
/// says is of that type, so converting it is exact.
Tensor literal(DType dtype, double value, std::unique_ptr<std::byte[]> &bytes) {
  Tensor t = apart({nullptr, dtype, {}}, bytes);
  storeScalar(static_cast<char *>(t.data), dtype, value);
  return t;
}

KernelAttrs lastAxis(const Tensor &t) {
  KernelAttrs attrs;
  attrs.set("axis", int64_t(t.rank() - 1));
  return attrs;
}

/// scale_mask_softmax (scores, mask, fill) -> softmax(where(mask, fill,
/// scores / divisor)) along the last dim: the three ops it replaced, each
/// into a tensor of the scores' type.
void scaleMaskSoftmax(const KernelCall &call, const PartLauncher &launch) {
  const Tensor &x = call.in[0], &out = call.out[0];
  std::unique_ptr<std::byte[]> divisorBytes, quotientBytes, maskedBytes;
  Tensor divisor = literal(x.dtype, call.f("divisor"), divisorBytes);
  Tensor quotient = apart(out, quotientBytes), masked = apart(out, maskedBytes);
  KernelAttrs none;
  launch({"div", {x, divisor}, {quotient}, none, call.ctx});
  launch(
      {"where", {call.in[1], call.in[2], quotient}, {masked}, none, call.ctx});
  launch({"softmax", {masked}, {out}, lastAxis(out), call.ctx});
}

/// scale_mask_softmax_grad (output, grad, mask) -> where(mask, 0,
/// softmax_grad(output, grad)) / divisor: the three ops of the backward it
/// replaced.
void scaleMaskSoftmaxGrad(const KernelCall &call, const PartLauncher &launch) {
  const Tensor &out = call.out[0];
  std::unique_ptr<std::byte[]> divisorBytes, zeroBytes, gradBytes, maskedBytes;
  Tensor divisor = literal(out.dtype, call.f("divisor"), divisorBytes);
  Tensor zero = literal(out.dtype, 0.0, zeroBytes);
  Tensor grad = apart(out, gradBytes), masked = apart(out, maskedBytes);
  launch({"softmax_grad",
          {call.in[0], call.in[1]},
          {grad},
          lastAxis(out),
          call.ctx});
  KernelAttrs none;
  launch({"where", {call.in[2], zero, grad}, {masked}, none, call.ctx});
  launch({"div", {masked, divisor}, {out}, none, call.ctx});
}

} // namespace

const OpTable<FusedFn> &fusedKernels() {
  static const OpTable<FusedFn> table = [] {
    OpTable<FusedFn> t;
    t[Op::AddLayerNorm] = addLayerNorm;
    t[Op::GemmGeluTanh] = gemmGeluTanh;
    t[Op::GemmGeluTanhGrad] = gemmGeluTanhGrad;
    t[Op::ScaleMaskSoftmax] = scaleMaskSoftmax;
    t[Op::ScaleMaskSoftmaxGrad] = scaleMaskSoftmaxGrad;
    t[Op::SoftmaxCrossEntropyAndGrad] = softmaxCrossEntropyAndGrad;
    t[Op::WgradBias] = wgradBias;
    return t;
  }();
  return table;
}

FusedFn partsOf(const KernelCall &call) {
  if (call.kernel == "gather_grad" ||
      call.kernel == "vocab_parallel_gather_grad")
    return call.in.size() == 3 ? scatterAddInto : nullptr;
  return fusedKernels().find(call.kernel);
}

} // namespace weft::rt
