//===- Loss.cu - the classification losses and their gradients on the GPU -===//
//
// SoftmaxCrossEntropyLoss-13 and NegativeLogLikelihoodLoss-13 as the CPU
// kernels compute them (Loss.cpp, ClassTargets.h): a warp per sample row
// computes the log-probabilities (max subtracted, exp summed in double)
// and the row's weighted loss; one block then sums the rows' losses and
// weights in a fixed order ("sum", or "mean": divided by the summed
// weights). With log_sum_exp the forward writes each row's log-sum-exp
// instead of its log-probabilities, and the gradient recomputes them from
// the scores (RowMath.h's crossEntropyLogProb); softmax_cross_entropy_and_grad
// does both in one warp per row, writing the gradient over the scores
// where the plan puts it there. A label outside [0, C)
// that is not ignore_index is a Fault the backend reports at its next
// synchronisation.
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

/// Row k's max and log(sum of exp(x - max)) (the sum in double), every
/// lane of the warp receiving them: the lanes stride the classes.
template <Storage S>
__device__ void rowStats(const void *in, const Targets &t, int64_t k, int lane,
                         float &max, float &logSum) {
  max = -FLT_MAX;
  for (int64_t c = lane; c < t.classes; c += 32)
    max = fmaxf(max, load<S>(in, t.at(k, c)));
  max = warpMax(max);
  double sum = 0;
  for (int64_t c = lane; c < t.classes; c += 32)
    sum += expf(load<S>(in, t.at(k, c)) - max);
  logSum = softmaxRowConstant<true, float>(warpSum(sum));
}

/// The gradient's scale at element k of class `cls` and weight w
/// (ClassTargets::scale): w dloss, w dloss[k] ("none"), or w dloss over the
/// summed weights ("mean"); 0 when ignored. `dloss(i)` reads dloss[i].
template <typename Dloss>
__device__ double gradScale(const Targets &t, int64_t k, int64_t cls, double w,
                            Dloss dloss, const double *weightSum) {
  if (cls < 0)
    return 0;
  if (t.reduction == Reduction::None)
    return w * dloss(k);
  if (t.reduction == Reduction::Sum)
    return w * dloss(0);
  return *weightSum != 0 ? w * dloss(0) / *weightSum : 0.0;
}

/// Where the rows' losses go: each row's weighted loss and weight, which
/// lossTotalKernel sums, and with "none" the loss itself (`none`, of O).
struct RowLosses {
  double *loss, *weight;
  void *none;
  /// Row k's: -w log p[class] (`picked`), 0 when ignored (cls < 0).
  template <Storage O>
  __device__ void put(int64_t k, int64_t cls, double w, double picked) const {
    double l = cls < 0 ? 0.0 : -w * picked;
    loss[k] = l;
    weight[k] = w;
    if (none)
      store<O>(none, k, float(l));
  }
};

/// Per row: the log-probabilities (Softmax; with `keepLse` the row's
/// log-sum-exp instead, at k) or the input read as them, the row's loss -w
/// logp[class] and weight; "none" stores the loss as is. S: the input; O:
/// the log-probabilities and loss (f32 beside 16-bit scores under
/// log_prob_type, else S).
template <Storage S, Storage O, bool Softmax>
__global__ void lossRowsKernel(const void *in, void *logp, bool keepLse,
                               Targets t, RowLosses rows) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(k, t.rows) {
    double w;
    int64_t cls = t.read<S>(k, w);
    double picked = 0;
    if constexpr (Softmax) {
      float max, logSum;
      rowStats<S>(in, t, k, lane, max, logSum);
      for (int64_t c = lane; c < t.classes; c += 32) {
        float v = softmaxAt<true>(load<S>(in, t.at(k, c)), max, logSum);
        if (!keepLse)
          store<O>(logp, t.at(k, c), v);
        if (c == cls)
          picked = v;
      }
      picked = warpSum(picked); // one lane holds it
      if (keepLse && lane == 0)
        store<O>(logp, k, crossEntropyLogSumExp(max, logSum));
    } else if (cls >= 0) {
      picked = load<S>(in, t.at(k, cls));
    }
    if (lane == 0)
      rows.put<O>(k, cls, w, picked);
  }
}

// A block of 1024 threads: __launch_bounds__ holds its kernels to the 64
// registers a thread that leaves (65536 a block on sm_90).
constexpr int kSumThreads = 1024;

/// The sum of `v` over the block's kSumThreads threads in a fixed order (a
/// tree over `part`, shared memory), in every thread.
__device__ double blockSum(double v, double *part) {
  part[threadIdx.x] = v;
  __syncthreads();
  for (int half = kSumThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  double total = part[0];
  __syncthreads(); // `part` may be reused
  return total;
}

/// One block: the rows' losses and weights summed in a fixed order.
template <Storage S>
__global__ void __launch_bounds__(kSumThreads)
    lossTotalKernel(const double *rowLoss, const double *rowWeight,
                    int64_t rows, Reduction reduction, void *out) {
  __shared__ double part[kSumThreads];
  double l = 0, w = 0;
  for (int64_t k = threadIdx.x; k < rows; k += kSumThreads) {
    l += rowLoss[k];
    w += rowWeight[k];
  }
  l = blockSum(l, part);
  w = blockSum(w, part);
  if (threadIdx.x == 0)
    store<S>(out, 0,
             float(reduction == Reduction::Sum ? l
                   : w != 0                    ? l / w
                                               : 0.0));
}

/// The rows' losses and weights in the scratch buffer, `extra` doubles
/// after them for the caller; "none" writes the losses to output 0.
RowLosses rowLossesOf(const KernelCall &call, const Targets &t,
                      const Context &ctx, size_t extra = 0) {
  auto *scratch = static_cast<double *>(
      ctx.scratch->get((2 * t.rows + extra) * sizeof(double), ctx.stream));
  return {scratch, scratch + t.rows,
          t.reduction == Reduction::None ? call.out[0].data : nullptr};
}

/// The loss of a "sum" or "mean": the rows' sum into `out` (of O).
template <Storage O>
void sumRows(const RowLosses &rows, const Targets &t, const Tensor &out,
             const Context &ctx) {
  if (!rows.none)
    WEFT_LAUNCH(lossTotalKernel<O>, 1, kSumThreads, ctx.stream, rows.loss,
                rows.weight, t.rows, t.reduction, out.data);
}

/// softmax_cross_entropy (scores, labels[, weight]) -> (loss, log_prob);
/// nll_loss (log_prob, labels[, weight]) -> loss.
template <bool Softmax> void loss(const KernelCall &call, const Context &ctx) {
  const Tensor &in = call.in[0];
  Targets t = targetsOf(call, in, call.in[1],
                        call.in.size() > 2 ? &call.in[2] : nullptr, ctx);
  if (t.rows == 0)
    return;
  RowLosses rows = rowLossesOf(call, t, ctx);
  byStorage(call, in.dtype, [&]<Storage S>() {
    byStorage(call, call.out[0].dtype, [&]<Storage O>() {
      WEFT_LAUNCH((lossRowsKernel<S, O, Softmax>), warpGrid(t.rows), kThreads,
                  ctx.stream, in.data, Softmax ? call.out[1].data : nullptr,
                  call.flag("log_sum_exp"), t, rows);
      sumRows<O>(rows, t, call.out[0], ctx);
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// The "mean" denominator: the summed weights, in one block.
template <Storage S>
__global__ void __launch_bounds__(kSumThreads)
    weightSumKernel(Targets t, double *sum) {
  __shared__ double part[kSumThreads];
  double w = 0;
  for (int64_t k = threadIdx.x; k < t.rows; k += kSumThreads) {
    double wk;
    t.read<S>(k, wk);
    w += wk;
  }
  w = blockSum(w, part);
  if (threadIdx.x == 0)
    *sum = w;
}

/// d input: (softmax - onehot) scale (Softmax: the scores' gradient from
/// the log-probabilities) or -scale at the class (NLL), scale the row's
/// weight times dloss (ClassTargets::scale); from the scores when `lse`
/// holds their rows' log-sum-exp. S: the input, and dloss and lse unless
/// `widened` (then f32 beside 16-bit scores); D: the gradient (16 bits
/// beside f32 log-probabilities under grad_type, else S).
template <Storage S, Storage D, bool Softmax>
__global__ void lossGradKernel(const void *in, const void *lse, bool widened,
                               const void *dloss, Targets t,
                               const double *weightSum, void *dx, int64_t n) {
  auto scalar = [&](const void *p, int64_t i) {
    return widened ? load<Storage::F32>(p, i) : load<S>(p, i);
  };
  WEFT_GRID_STRIDE(e, n) {
    int64_t c = e / t.inner % t.classes;
    int64_t k = e / (t.inner * t.classes) * t.inner + e % t.inner;
    double w;
    int64_t cls = t.read<S>(k, w);
    double scale = gradScale(
        t, k, cls, w, [&](int64_t i) { return scalar(dloss, i); }, weightSum);
    float x = load<S>(in, e);
    float lp = lse ? crossEntropyLogProb(x, scalar(lse, k)) : x;
    double g = Softmax ? crossEntropyGradAt(lp, c == cls, scale)
                       : (c == cls ? -scale : 0.0);
    store<D>(dx, e, float(g));
  }
}

/// (log_prob or input, labels, dloss[, weight]) -> d scores / d input;
/// with log_sum_exp (scores, labels, dloss[, weight], log_sum_exp).
template <bool Softmax>
void lossGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &in = call.in[0];
  bool fromScores = call.flag("log_sum_exp");
  size_t withWeights = fromScores ? 5 : 4;
  Targets t =
      targetsOf(call, in, call.in[1],
                call.in.size() == withWeights ? &call.in[3] : nullptr, ctx);
  const void *lse = fromScores ? call.in.back().data : nullptr;
  bool widened = call.in[2].dtype == DType::F32 && in.dtype != DType::F32;
  int64_t n = in.numel();
  if (n == 0)
    return;
  auto *weightSum =
      static_cast<double *>(ctx.scratch->get(sizeof(double), ctx.stream));
  byStorage(call, in.dtype, [&]<Storage S>() {
    if (t.reduction == Reduction::Mean)
      WEFT_LAUNCH(weightSumKernel<S>, 1, kSumThreads, ctx.stream, t, weightSum);
    byStorage(call, call.out[0].dtype, [&]<Storage D>() {
      WEFT_LAUNCH((lossGradKernel<S, D, Softmax>), grid(n), kThreads,
                  ctx.stream, in.data, lse, widened, call.in[2].data, t,
                  weightSum, call.out[0].data, n);
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// softmax_cross_entropy_and_grad's rows (a warp each): the forward's
/// log-sum-exp, loss and weight (lossRowsKernel with log_sum_exp), then the
/// gradient from the log-sum-exp as stored (lossGradKernel), each score
/// read before its gradient is written: `dx` may be `in`. Reads the scores
/// three times, where the two kernels read them four (and write them once,
/// as they do): a row stays in L1/L2 between the passes. S: the scores and
/// their gradient; O: the loss, log-sum-exp and dloss.
template <Storage S, Storage O>
__global__ void lossAndGradRowsKernel(const void *in, void *lseOut,
                                      const void *dloss, Targets t,
                                      const double *weightSum, RowLosses rows,
                                      void *dx) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(k, t.rows) {
    double w;
    int64_t cls = t.read<S>(k, w);
    float max, logSum;
    rowStats<S>(in, t, k, lane, max, logSum);
    float lse = rounded<O>(crossEntropyLogSumExp(max, logSum));
    double scale = gradScale(
        t, k, cls, w, [&](int64_t i) { return load<O>(dloss, i); }, weightSum);
    double picked = 0;
    for (int64_t c = lane; c < t.classes; c += 32) {
      int64_t e = t.at(k, c);
      float x = load<S>(in, e);
      if (c == cls)
        picked = softmaxAt<true>(x, max, logSum);
      store<S>(dx, e,
               float(crossEntropyGradAt(crossEntropyLogProb(x, lse), c == cls,
                                        scale)));
    }
    picked = warpSum(picked); // one lane holds it
    if (lane == 0) {
      store<O>(lseOut, k, lse);
      rows.put<O>(k, cls, w, picked);
    }
  }
}

/// (scores, labels, dloss[, weight]) -> (loss, log_sum_exp, d scores): the
/// mean's denominator, the rows, then their sum.
void lossAndGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &in = call.in[0];
  Targets t = targetsOf(call, in, call.in[1],
                        call.in.size() > 3 ? &call.in[3] : nullptr, ctx);
  if (t.rows == 0)
    return;
  RowLosses rows = rowLossesOf(call, t, ctx, 1);
  double *weightSum = rows.weight + t.rows; // the one double after them
  byStorage(call, in.dtype, [&]<Storage S>() {
    if (t.reduction == Reduction::Mean)
      WEFT_LAUNCH(weightSumKernel<S>, 1, kSumThreads, ctx.stream, t, weightSum);
    byStorage(call, call.out[0].dtype, [&]<Storage O>() {
      WEFT_LAUNCH((lossAndGradRowsKernel<S, O>), warpGrid(t.rows), kThreads,
                  ctx.stream, in.data, call.out[1].data, call.in[2].data, t,
                  weightSum, rows, call.out[2].data);
      sumRows<O>(rows, t, call.out[0], ctx);
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// Vocabulary-parallel cross-entropy (Megatron-LM's; formulas on the ops,
// WeftParallelOps.td): scores [N, C] are this rank's classes [start,
// start + C) of every row; max [N, 1] and stats [N, 2] (sum of exp(s -
// max), the label's score) are already reduced over the ranks.
//===----------------------------------------------------------------------===//

/// A label that is ignore_index, when the call has one.
struct Ignore {
  bool has = false;
  int64_t index = 0;
  __device__ bool operator()(int64_t label) const {
    return has && label == index;
  }
};

Ignore ignoreOf(const KernelCall &call) {
  return {call.has("ignore_index"),
          call.has("ignore_index") ? call.i("ignore_index") : 0};
}

/// Per row: this rank's sum of exp(s - max) and the label's score (0 when
/// another rank holds the label's class).
template <Storage S>
__global__ void vocabStatsKernel(const void *scores, const void *max,
                                 const void *labels, bool wide, void *stats,
                                 int64_t rows, int64_t classes, int64_t start) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(i, rows) {
    float m = load<S>(max, i);
    double sum = 0;
    for (int64_t k = lane; k < classes; k += 32)
      sum += expf(load<S>(scores, i * classes + k) - m);
    sum = warpSum(sum);
    if (lane == 0) {
      int64_t local = loadIndex(labels, wide, i) - start;
      store<S>(stats, 2 * i, float(sum));
      store<S>(stats, 2 * i + 1,
               local >= 0 && local < classes
                   ? load<S>(scores, i * classes + local)
                   : 0.0f);
    }
  }
}

void vocabStats(const KernelCall &call, const Context &ctx) {
  const Tensor &scores = call.in[0], &labels = call.in[2];
  int64_t rows = scores.shape[0], classes = scores.shape[1];
  if (rows == 0)
    return;
  byStorage(call, scores.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(vocabStatsKernel<S>, warpGrid(rows), kThreads, ctx.stream,
                scores.data, call.in[1].data, labels.data,
                labels.dtype == DType::I64, call.out[0].data, rows, classes,
                call.i("start"));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// Per row: the log-probabilities s - max - log(sum) and the row's loss
/// max + log(sum) - s[label] (weight 0 when ignored).
template <Storage S>
__global__ void vocabLossRowsKernel(const void *scores, const void *max,
                                    const void *stats, const void *labels,
                                    bool wide, Ignore ignore, void *logp,
                                    double *rowLoss, double *rowWeight,
                                    int64_t rows, int64_t classes) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(i, rows) {
    float m = load<S>(max, i);
    float logSum = softmaxRowConstant<true, float>(load<S>(stats, 2 * i));
    for (int64_t k = lane; k < classes; k += 32)
      store<S>(logp, i * classes + k,
               softmaxAt<true>(load<S>(scores, i * classes + k), m, logSum));
    if (lane == 0) {
      bool skip = ignore(loadIndex(labels, wide, i));
      rowLoss[i] = skip ? 0.0 : double(m) + logSum - load<S>(stats, 2 * i + 1);
      rowWeight[i] = skip ? 0.0 : 1.0;
    }
  }
}

/// (scores, max, stats, labels) -> (mean loss over the rows not ignored,
/// log-probabilities).
void vocabCrossEntropy(const KernelCall &call, const Context &ctx) {
  const Tensor &scores = call.in[0], &labels = call.in[3];
  int64_t rows = scores.shape[0], classes = scores.shape[1];
  if (rows == 0)
    return;
  auto *rowLoss = static_cast<double *>(
      ctx.scratch->get(2 * rows * sizeof(double), ctx.stream));
  byStorage(call, scores.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(vocabLossRowsKernel<S>, warpGrid(rows), kThreads, ctx.stream,
                scores.data, call.in[1].data, call.in[2].data, labels.data,
                labels.dtype == DType::I64, ignoreOf(call), call.out[1].data,
                rowLoss, rowLoss + rows, rows, classes);
    WEFT_LAUNCH(lossTotalKernel<S>, 1, kSumThreads, ctx.stream, rowLoss,
                rowLoss + rows, rows, Reduction::Mean, call.out[0].data);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// The rows not ignored, in one block.
__global__ void __launch_bounds__(kSumThreads)
    countKernel(const void *labels, bool wide, Ignore ignore, int64_t rows,
                double *count) {
  __shared__ double part[kSumThreads];
  double c = 0;
  for (int64_t i = threadIdx.x; i < rows; i += kSumThreads)
    c += ignore(loadIndex(labels, wide, i)) ? 0.0 : 1.0;
  c = blockSum(c, part);
  if (threadIdx.x == 0)
    *count = c;
}

template <Storage S>
__global__ void vocabGradKernel(const void *logp, const void *labels, bool wide,
                                Ignore ignore, const void *dloss,
                                const double *count, void *dx, int64_t rows,
                                int64_t classes, int64_t start) {
  WEFT_GRID_STRIDE(e, rows * classes) {
    int64_t i = e / classes, k = e % classes;
    int64_t label = loadIndex(labels, wide, i);
    double scale = *count != 0 ? load<S>(dloss, 0) / *count : 0.0;
    store<S>(dx, e,
             ignore(label) ? 0.0f
                           : float(crossEntropyGradAt(
                                 load<S>(logp, e), label - start == k, scale)));
  }
}

/// (log_prob, labels, dloss) -> d scores: (softmax - onehot) dloss / the
/// rows not ignored.
void vocabCrossEntropyGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &logp = call.in[0], &labels = call.in[1];
  int64_t rows = logp.shape[0], classes = logp.shape[1];
  if (rows * classes == 0)
    return;
  auto *count =
      static_cast<double *>(ctx.scratch->get(sizeof(double), ctx.stream));
  bool wide = labels.dtype == DType::I64;
  WEFT_LAUNCH(countKernel, 1, kSumThreads, ctx.stream, labels.data, wide,
              ignoreOf(call), rows, count);
  byStorage(call, logp.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(vocabGradKernel<S>, grid(rows * classes), kThreads, ctx.stream,
                logp.data, labels.data, wide, ignoreOf(call), call.in[2].data,
                count, call.out[0].data, rows, classes, call.i("start"));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerLossKernels(KernelTable &t) {
  t[Op::VocabParallelCrossEntropyStats] = vocabStats;
  t[Op::VocabParallelCrossEntropy] = vocabCrossEntropy;
  t[Op::VocabParallelCrossEntropyGrad] = vocabCrossEntropyGrad;
  t[Op::SoftmaxCrossEntropy] = loss<true>;
  t[Op::NllLoss] = loss<false>;
  t[Op::SoftmaxCrossEntropyGrad] = lossGrad<true>;
  t[Op::SoftmaxCrossEntropyAndGrad] = lossAndGrad;
  t[Op::NllLossGrad] = lossGrad<false>;
}

} // namespace weft::rt::cuda
