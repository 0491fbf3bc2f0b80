//===- Loss.cpp - softmax cross-entropy and negative log-likelihood -------===//
//
// ONNX SoftmaxCrossEntropyLoss-13 / NegativeLogLikelihoodLoss-13: per-element
// loss -w[label] * log_prob[label]; ignored labels weigh 0; "mean" divides by
// the summed weights (the count of non-ignored elements without weights),
// as the ONNX reference and torch do.
//
//===----------------------------------------------------------------------===//

#include "ClassTargets.h"
#include "RowMath.h"

#include <cmath>

namespace weft::rt {

namespace {

/// NLL over log-probabilities `logp` [N, C, d...].
template <typename T>
void nll(const KernelCall &call, const T *logp, const Tensor &scores,
         const Tensor &target, const Tensor *weight, const Tensor &loss) {
  ClassTargets targets(call, scores, target, weight);
  T *out = loss.as<T>();
  double total = 0;
  for (int64_t k = 0; k < targets.n * targets.inner; ++k) {
    int64_t t = targets.cls[k];
    double value = t < 0 ? 0.0 : -targets.weight[k] * logp[targets.at(k, t)];
    if (targets.reduction == "none")
      out[k] = static_cast<T>(value);
    total += value;
  }
  if (targets.reduction == "sum")
    out[0] = static_cast<T>(total);
  else if (targets.reduction == "mean")
    out[0] = static_cast<T>(targets.weightSum != 0 ? total / targets.weightSum
                                                   : 0.0);
}

template <typename T> void softmaxCrossEntropy(const KernelCall &call) {
  const Tensor &scores = call.in[0], &labels = call.in[1];
  // log_prob = log_softmax over the class dim 1.
  int64_t n = scores.shape[0], c = scores.shape[1];
  int64_t inner = scores.numel() / (n * c);
  const T *in = scores.as<T>();
  T *logp = call.out[1].as<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      const T *row = in + b * c * inner + i;
      T *dst = logp + b * c * inner + i;
      softmaxRow<true, T>(
          c, [&](int64_t k) { return row[k * inner]; },
          [&](int64_t k, T value) { dst[k * inner] = value; });
    }
  nll(call, logp, scores, labels, call.in.size() > 2 ? &call.in[2] : nullptr,
      call.out[0]);
}

template <typename T> void nllLoss(const KernelCall &call) {
  const Tensor &input = call.in[0];
  nll(call, input.as<T>(), input, call.in[1],
      call.in.size() > 2 ? &call.in[2] : nullptr, call.out[0]);
}

} // namespace

void registerLossKernels(KernelTable &t) {
  // Generic lambdas: the float or double instance for the scores' dtype.
  t["softmax_cross_entropy"] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype,
                  [&]<typename T>() { softmaxCrossEntropy<T>(c); });
  };
  t["nll_loss"] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { nllLoss<T>(c); });
  };
}

} // namespace weft::rt
