//===- Specs.h - helpers shared by the kernel specification entries -------===//
//
// Private to runtime/lib/specs: the entry lists of each kernel group and the
// shape and cost rules several entries share.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_LIB_SPECS_SPECS_H
#define WEFT_RUNTIME_LIB_SPECS_SPECS_H

#include "weft/ops/Glu.h"
#include "weft/runtime/KernelSpec.h"

#include <climits>
#include <initializer_list>

namespace weft::rt::specs {

using Types = std::vector<TensorType>;

void addElementwiseSpecs(std::vector<KernelSpec> &table);
void addTensorSpecs(std::vector<KernelSpec> &table);
void addNetworkSpecs(std::vector<KernelSpec> &table);
void addBackwardSpecs(std::vector<KernelSpec> &table);
void addParallelSpecs(std::vector<KernelSpec> &table);
void addAttentionSpecs(std::vector<KernelSpec> &table);

/// a * b, saturating at INT64_MAX (costs of hostile shapes stay defined).
inline int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/// a + b of non-negative costs, saturating at INT64_MAX.
inline int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/// Product of `dims` (the shape rule has bounded each by a buffer's size,
/// attribute lists are not: saturating).
inline int64_t product(const std::vector<int64_t> &dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p = satMul(p, d);
  return p;
}

/// An entry whose op's record counts its FLOPs (Ops.def's Flops column:
/// PerInput, PerOutput or NoFlops); Custom ops give their rule instead.
inline constexpr int64_t (*fromRecord)(const SpecCall &,
                                       const Types &) = nullptr;
/// A scatter-add of an embedding's gradient (dy, indices, sum?): 1 per
/// element of dy; numel(output 0) more accumulating into the sum (the add
/// it replaces).
inline int64_t scatterAddFlops(const SpecCall &call, const Types &out) {
  int64_t flops = call.in[0].numel();
  return call.in.size() == 3 ? satAdd(flops, out[0].numel()) : flops;
}

/// dropout's `ratio` is a probability in [0, 1) (Dropout-13).
inline void checkRatio(const SpecCall &call) {
  double ratio = call.attrs.f("ratio");
  if (!(ratio >= 0.0 && ratio < 1.0))
    call.fail("attribute 'ratio' is " + std::to_string(ratio) +
              ", expected [0, 1)");
}

/// Output 0 has input 0's type.
inline Types likeInput(const SpecCall &call) { return {call.in[0]}; }

/// Input 1 (an upstream gradient) must have input 0's type, and so has the
/// output: the activation gradients (relu_grad, softmax_grad, ...).
inline Types inputGrad(const SpecCall &call) {
  call.requireType(1, call.in[0], "the gradient");
  return {call.in[0]};
}

/// Resize's attributes for a rank-`rank` input: one positive finite scale
/// per dim and known coordinate/nearest modes (resize and resize_grad).
void checkResizeModes(const SpecCall &call, int64_t rank);

/// The spatial output size of a window (ONNX Conv-11/MaxPool-12 formula):
/// floor or ceil((in + padBegin + padEnd - ((kernel-1)*dilation+1)) /
/// stride) + 1, 0 when the window does not fit; fails on overflow.
int64_t windowOutputSize(const SpecCall &call, int64_t in, int64_t kernel,
                         int64_t stride, int64_t padBegin, int64_t padEnd,
                         int64_t dilation, bool ceilMode);

/// Checks window attributes for `spatial` dims: `strides` and (when not
/// empty) `dilations` one positive entry each, `pads` 2 * spatial entries
/// (begins, then ends), non-negative unless `negativePads` (ConvTranspose's
/// output_shape resolves to negative pads, which widen the output).
void checkWindow(const SpecCall &call, int64_t spatial,
                 const std::vector<int64_t> &strides,
                 const std::vector<int64_t> &pads,
                 const std::vector<int64_t> &dilations,
                 bool negativePads = false);

/// Pooling output [N, C, windowOutputSize(...)...] of input 0; `dilations`
/// empty means 1 (average pooling).
Types poolOutput(const SpecCall &call, bool ceilMode,
                 const std::vector<int64_t> &dilations);

/// Convolution output [N, M, ...] of input [N, C, D...] and a weight of
/// shape [M, C/group, k...] (which may be an output, for conv_weight_grad).
std::vector<int64_t> convOutputShape(const SpecCall &call,
                                     const TensorType &input,
                                     const std::vector<int64_t> &weight);

/// A loss of scores [N, C, d...] (input 0) and class targets [N, d...]
/// (input 1; their dtypes are the entries'), with optional class weights [C] as
/// input `weightInput`: the loss's type, a scalar or (reduction "none") [N,
/// d...].
Types lossOutput(const SpecCall &call, size_t weightInput);

/// A tensor-parallel dropout draws the mask elements of its shard of the
/// whole tensor (local `shape`): all four shard attributes (shard_dim,
/// shard_blocks, shard_count, shard_index) or none, each in range. Shared
/// by dropout and attention (whose mask has the probabilities' shape).
void checkDropoutShard(const SpecCall &call, const std::vector<int64_t> &shape);

/// The statistics layer_norm stashes for its gradient: X's leading dims
/// before `axis`, 1 over the normalised ones, f32 (LayerNormalization-17's
/// stash_type). Shared by layer_norm and layer_norm_grad.
TensorType layerNormStats(const TensorType &x, int64_t axis);

/// glu's and glu_grad's gate (input 0) after checking their `activation`
/// (an unknown name fails naming it) and that up (input 1) is its type.
TensorType gluOperands(const SpecCall &call);
/// Their FLOPs: weft/ops/Glu.h's per element of the gate.
int64_t gluFlops(const SpecCall &call, bool grad);

/// rms_norm's operands (x, scale, ...): scale x's dtype with exactly the
/// normalised dims' shape [axis, rank), which the kernels read as a flat
/// row. Returns its inv_rms statistics: x's leading dims, 1 over the
/// normalised ones, f32 (f64 beside f64 x: the float64 oracles). Shared by
/// rms_norm and rms_norm_grad.
TensorType rmsNormStats(const SpecCall &call);

/// Whether `wide` is f32 beside a 16-bit `half`: mixed precision's pairs
/// (a LayerNorm's f32 affine parameters, a loss's f32 log-probabilities of
/// 16-bit logits).
inline bool widensHalf(DType half, DType wide) {
  return isHalf(half) && wide == DType::F32;
}

/// layer_norm's scale and bias (input k): x's dtype, or f32 under a 16-bit
/// x (mixed precision's f32 affine parameters beside 16-bit activations,
/// the math in f32 either way). Shared by layer_norm and layer_norm_grad.
void requireLayerNormAffine(const SpecCall &call, size_t k);

/// batch_norm's operands: input 0 is [N, C, ...] and inputs 1, 2,
/// ... (named by `names`) are [C] of its dtype. Returns the [C] type.
/// Shared by batch_norm and batch_norm_grad.
TensorType batchNormChannels(const SpecCall &call,
                             std::initializer_list<const char *> names);

} // namespace weft::rt::specs

#endif // WEFT_RUNTIME_LIB_SPECS_SPECS_H
