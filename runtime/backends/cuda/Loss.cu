//===- Loss.cu - the classification losses and their gradients on the GPU -===//
//
// SoftmaxCrossEntropyLoss-13 and NegativeLogLikelihoodLoss-13 as the CPU
// kernels compute them (Loss.cpp, ClassTargets.h): a warp per sample row
// computes the log-probabilities (max subtracted, exp summed in double)
// and the row's weighted loss; one block then sums the rows' losses and
// weights in a fixed order ("sum", or "mean": divided by the summed
// weights). A label outside [0, C) that is not ignore_index is a Fault the
// backend reports at its next synchronisation.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Launch.cuh"
#include "Storage.cuh"

#include "../../kernels/RowMath.h"

#include <cfloat>

namespace weft::rt::cuda {

namespace {

enum class Reduction { None, Sum, Mean };

/// The targets of a loss over an input [N, C, d...]: element k of the
/// labels [N, d...] names a class; it weighs weight[class] (1 without
/// weights) unless it is ignore_index.
struct Targets {
  const void *labels = nullptr, *weight = nullptr;
  bool wide = false, hasIgnore = false;
  int64_t ignore = 0, classes = 1, inner = 1, rows = 0;
  Reduction reduction = Reduction::Mean;
  int64_t instruction = 0;
  Fault *fault = nullptr;

  /// Element k's class, or -1 when ignored (weight 0) or out of range (a
  /// fault); its weight in `w`.
  template <Storage S> __device__ int64_t read(int64_t k, double &w) const {
    int64_t t = loadIndex(labels, wide, k);
    w = 0;
    if (hasIgnore && t == ignore)
      return -1;
    if (t < 0 || t >= classes) {
      raise(fault, Fault::Label, instruction, t, classes);
      return -1;
    }
    w = weight ? double(load<S>(weight, t)) : 1.0;
    return t;
  }
  /// Flat index in the input of element k's class c.
  __device__ int64_t at(int64_t k, int64_t c) const {
    return (k / inner * classes + c) * inner + k % inner;
  }
};

Targets targetsOf(const KernelCall &call, const Tensor &input,
                  const Tensor &labels, const Tensor *weight,
                  const Context &ctx) {
  Targets t;
  t.labels = labels.data;
  t.wide = labels.dtype == DType::I64;
  t.weight = weight ? weight->data : nullptr;
  if (weight && weight->dtype != input.dtype)
    unsupported(call, weight->dtype);
  t.hasIgnore = call.has("ignore_index");
  t.ignore = t.hasIgnore ? call.i("ignore_index") : 0;
  t.classes = input.shape[1];
  t.rows = labels.numel();
  t.inner = input.shape[0] ? t.rows / input.shape[0] : 1;
  const std::string &r = call.s("reduction");
  t.reduction = r == "none"  ? Reduction::None
                : r == "sum" ? Reduction::Sum
                             : Reduction::Mean;
  t.instruction = call.ctx.instruction;
  t.fault = ctx.fault;
  return t;
}

/// Per row: the log-probabilities (Softmax) or the input read as them, the
/// row's loss -w logp[class] and weight; "none" stores the loss as is.
template <Storage S, bool Softmax>
__global__ void lossRowsKernel(const void *in, void *logp, Targets t,
                               double *rowLoss, double *rowWeight,
                               void *lossNone) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(k, t.rows) {
    double w;
    int64_t cls = t.read<S>(k, w);
    double picked = 0;
    if constexpr (Softmax) {
      float max = -FLT_MAX;
      for (int64_t c = lane; c < t.classes; c += 32)
        max = fmaxf(max, load<S>(in, t.at(k, c)));
      max = warpMax(max);
      double sum = 0;
      for (int64_t c = lane; c < t.classes; c += 32)
        sum += expf(load<S>(in, t.at(k, c)) - max);
      float logSum = softmaxRowConstant<true, float>(warpSum(sum));
      for (int64_t c = lane; c < t.classes; c += 32) {
        float v = softmaxAt<true>(load<S>(in, t.at(k, c)), max, logSum);
        store<S>(logp, t.at(k, c), v);
        if (c == cls)
          picked = v;
      }
      picked = warpSum(picked); // one lane holds it
    } else if (cls >= 0) {
      picked = load<S>(in, t.at(k, cls));
    }
    if (lane == 0) {
      double loss = cls < 0 ? 0.0 : -w * picked;
      rowLoss[k] = loss;
      rowWeight[k] = w;
      if (lossNone)
        store<S>(lossNone, k, float(loss));
    }
  }
}

constexpr int kSumThreads = 1024;

/// One block: the rows' losses and weights summed in a fixed order.
template <Storage S>
__global__ void lossTotalKernel(const double *rowLoss, const double *rowWeight,
                                int64_t rows, Reduction reduction, void *out) {
  __shared__ double loss[kSumThreads], weight[kSumThreads];
  double l = 0, w = 0;
  for (int64_t k = threadIdx.x; k < rows; k += kSumThreads) {
    l += rowLoss[k];
    w += rowWeight[k];
  }
  loss[threadIdx.x] = l;
  weight[threadIdx.x] = w;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      loss[threadIdx.x] += loss[threadIdx.x + half];
      weight[threadIdx.x] += weight[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0)
    store<S>(out, 0,
             float(reduction == Reduction::Sum ? loss[0]
                   : weight[0] != 0            ? loss[0] / weight[0]
                                               : 0.0));
}

/// softmax_cross_entropy (scores, labels[, weight]) -> (loss, log_prob);
/// nll_loss (log_prob, labels[, weight]) -> loss.
template <bool Softmax> void loss(const KernelCall &call, const Context &ctx) {
  const Tensor &in = call.in[0];
  Targets t = targetsOf(call, in, call.in[1],
                        call.in.size() > 2 ? &call.in[2] : nullptr, ctx);
  if (t.rows == 0)
    return;
  auto *rowLoss = static_cast<double *>(
      ctx.scratch->get(2 * t.rows * sizeof(double), ctx.stream));
  void *none = t.reduction == Reduction::None ? call.out[0].data : nullptr;
  byStorage(call, in.dtype, [&]<Storage S>() {
    lossRowsKernel<S, Softmax><<<warpGrid(t.rows), kThreads, 0, ctx.stream>>>(
        in.data, Softmax ? call.out[1].data : nullptr, t, rowLoss,
        rowLoss + t.rows, none);
    if (!none)
      lossTotalKernel<S><<<1, kSumThreads, 0, ctx.stream>>>(
          rowLoss, rowLoss + t.rows, t.rows, t.reduction, call.out[0].data);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// The "mean" denominator: the summed weights, in one block.
template <Storage S> __global__ void weightSumKernel(Targets t, double *sum) {
  __shared__ double part[kSumThreads];
  double w = 0;
  for (int64_t k = threadIdx.x; k < t.rows; k += kSumThreads) {
    double wk;
    t.read<S>(k, wk);
    w += wk;
  }
  part[threadIdx.x] = w;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *sum = part[0];
}

/// d input: (softmax - onehot) scale (Softmax: the scores' gradient from
/// the log-probabilities) or -scale at the class (NLL), scale the row's
/// weight times dloss (ClassTargets::scale).
template <Storage S, bool Softmax>
__global__ void lossGradKernel(const void *in, const void *dloss, Targets t,
                               const double *weightSum, void *dx, int64_t n) {
  WEFT_GRID_STRIDE(e, n) {
    int64_t c = e / t.inner % t.classes;
    int64_t k = e / (t.inner * t.classes) * t.inner + e % t.inner;
    double w;
    int64_t cls = t.read<S>(k, w);
    double scale = 0;
    if (cls >= 0)
      scale =
          t.reduction == Reduction::None ? w * load<S>(dloss, k)
          : t.reduction == Reduction::Sum
              ? w * load<S>(dloss, 0)
              : (*weightSum != 0 ? w * load<S>(dloss, 0) / *weightSum : 0.0);
    double g = Softmax ? crossEntropyGradAt(load<S>(in, e), c == cls, scale)
                       : (c == cls ? -scale : 0.0);
    store<S>(dx, e, float(g));
  }
}

/// (log_prob or input, labels, dloss[, weight]) -> d scores / d input.
template <bool Softmax>
void lossGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &in = call.in[0];
  Targets t = targetsOf(call, in, call.in[1],
                        call.in.size() > 3 ? &call.in[3] : nullptr, ctx);
  int64_t n = in.numel();
  if (n == 0)
    return;
  auto *weightSum =
      static_cast<double *>(ctx.scratch->get(sizeof(double), ctx.stream));
  byStorage(call, in.dtype, [&]<Storage S>() {
    if (t.reduction == Reduction::Mean)
      weightSumKernel<S><<<1, kSumThreads, 0, ctx.stream>>>(t, weightSum);
    lossGradKernel<S, Softmax><<<grid(n), kThreads, 0, ctx.stream>>>(
        in.data, call.in[2].data, t, weightSum, call.out[0].data, n);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerLossKernels(KernelTable &t) {
  t["softmax_cross_entropy"] = loss<true>;
  t["nll_loss"] = loss<false>;
  t["softmax_cross_entropy_grad"] = lossGrad<true>;
  t["nll_loss_grad"] = lossGrad<false>;
}

} // namespace weft::rt::cuda
