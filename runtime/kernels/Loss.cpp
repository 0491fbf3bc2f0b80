//===- Loss.cpp - softmax cross-entropy and negative log-likelihood -------===//
//
// ONNX SoftmaxCrossEntropyLoss-13 / NegativeLogLikelihoodLoss-13: per-element
// loss -w[label] * log_prob[label]; ignored labels weigh 0; "mean" divides by
// the summed weights (the count of non-ignored elements without weights),
// as the ONNX reference and torch do.
//
//===----------------------------------------------------------------------===//

#include "ClassTargets.h"
#include "CpuVector.h"
#include "RowMath.h"

#include <cmath>
#include <vector>

namespace weft::rt {

namespace {

/// NLL over log-probabilities [N, C, d...]: `logp(e)` reads element e.
template <typename T, typename LogProb>
void nll(const KernelCall &call, LogProb logp, const Tensor &scores,
         const Tensor &target, const Tensor *weight, const Tensor &loss) {
  ClassTargets targets(call, scores, target, weight);
  T *out = loss.as<T>();
  double total = 0;
  for (int64_t k = 0; k < targets.n * targets.inner; ++k) {
    int64_t t = targets.cls[k];
    double value = t < 0 ? 0.0 : -targets.weight[k] * logp(targets.at(k, t));
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

/// Rows of the log-softmax over the class dim 1 of `scores` [N, C, d...]:
/// the max and log(sum exp(x - max)) of row r = b inner + i.
template <typename T> struct SoftmaxRows {
  int64_t classes, inner;
  std::vector<T> max, logSum;

  explicit SoftmaxRows(const Tensor &scores)
      : classes(scores.shape[1]),
        inner(scores.numel() / (scores.shape[0] * scores.shape[1])),
        max(scores.numel() / classes), logSum(max.size()) {
    const T *in = scores.as<T>();
    for (int64_t r = 0; r < rows(); ++r) {
      const T *row = in + first(r);
      double sum;
      if (inner == 1) { // [N, C]: the row is contiguous (CpuVector.h)
        max[r] = vec::max(row, classes);
        sum = vec::expSum<T>(row, classes, max[r], nullptr);
      } else {
        softmaxRowSums<T>(
            classes, [&](int64_t k) { return row[k * inner]; }, max[r], sum);
      }
      logSum[r] = softmaxRowConstant<true, T>(sum);
    }
  }
  int64_t rows() const { return int64_t(max.size()); }
  /// Row r's element of class 0 (class k's is `inner` k further).
  int64_t first(int64_t r) const {
    return (r / inner * classes) * inner + r % inner;
  }
  /// The row of element e of [N, C, d...].
  int64_t rowOf(int64_t e) const {
    return e / (classes * inner) * inner + e % inner;
  }
  /// log_prob[e]: x - max - log(sum), as log_softmax writes it.
  T logProb(T x, int64_t e) const {
    int64_t r = rowOf(e);
    return softmaxAt<true>(x, max[r], logSum[r]);
  }
};

/// (scores, labels[, weights]) -> (loss, log_prob), or with log_sum_exp
/// (loss, log_sum_exp [N, d...]): the loss reads the same log-probability
/// at each label either way.
template <typename T> void softmaxCrossEntropy(const KernelCall &call) {
  const Tensor &scores = call.in[0], &labels = call.in[1];
  SoftmaxRows<T> rows(scores);
  const T *in = scores.as<T>();
  T *second = call.out[1].as<T>();
  bool lse = call.flag("log_sum_exp");
  for (int64_t r = 0; r < rows.rows(); ++r) {
    if (lse) {
      second[r] = crossEntropyLogSumExp(rows.max[r], rows.logSum[r]);
      continue;
    }
    for (int64_t k = 0, e = rows.first(r); k < rows.classes;
         ++k, e += rows.inner)
      second[e] = softmaxAt<true>(in[e], rows.max[r], rows.logSum[r]);
  }
  nll<T>(
      call, [&](int64_t e) { return rows.logProb(in[e], e); }, scores, labels,
      call.in.size() > 2 ? &call.in[2] : nullptr, call.out[0]);
}

template <typename T> void nllLoss(const KernelCall &call) {
  const Tensor &input = call.in[0];
  const T *logp = input.as<T>();
  nll<T>(
      call, [&](int64_t e) { return logp[e]; }, input, call.in[1],
      call.in.size() > 2 ? &call.in[2] : nullptr, call.out[0]);
}

} // namespace

void registerLossKernels(KernelTable &t) {
  // Generic lambdas: the float or double instance for the scores' dtype.
  t[Op::SoftmaxCrossEntropy] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype,
                  [&]<typename T>() { softmaxCrossEntropy<T>(c); });
  };
  t[Op::NllLoss] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { nllLoss<T>(c); });
  };
}

} // namespace weft::rt
