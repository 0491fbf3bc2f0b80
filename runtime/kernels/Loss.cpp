//===- Loss.cpp - softmax cross-entropy and negative log-likelihood -------===//
//
// ONNX SoftmaxCrossEntropyLoss-13 / NegativeLogLikelihoodLoss-13: per-element
// loss -w[label] * log_prob[label]; ignored labels weigh 0; "mean" divides by
// the summed weights (the count of non-ignored elements without weights),
// as the ONNX reference and torch do.
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"

#include <cmath>

namespace weft::rt {

namespace {

/// NLL over log-probabilities `logp` [N, C, d...] and `target` [N, d...].
void nll(const KernelCall &call, const float *logp, const Tensor &scores,
         const Tensor &target, const Tensor *weight, const Tensor &loss) {
  int64_t n = scores.shape[0], c = scores.shape[1];
  int64_t inner = scores.numel() / (n * c);
  bool hasIgnore = call.has("ignore_index");
  int64_t ignore = hasIgnore ? call.i("ignore_index") : 0;
  std::string reduction = call.s("reduction");
  const float *w = weight ? weight->as<float>() : nullptr;
  double total = 0, weightSum = 0;
  float *out = loss.as<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t t = target.dtype == DType::I64
                      ? target.as<int64_t>()[b * inner + i]
                      : target.as<int32_t>()[b * inner + i];
      double value = 0, weightOf = 0;
      if (!(hasIgnore && t == ignore)) {
        if (t < 0 || t >= c)
          call.fail("label " + std::to_string(t) + " out of range [0, " +
                    std::to_string(c) + ")");
        weightOf = w ? w[t] : 1.0;
        value = -weightOf * logp[(b * c + t) * inner + i];
      }
      if (reduction == "none")
        out[b * inner + i] = static_cast<float>(value);
      total += value;
      weightSum += weightOf;
    }
  if (reduction == "sum")
    out[0] = static_cast<float>(total);
  else if (reduction == "mean")
    out[0] = static_cast<float>(weightSum != 0 ? total / weightSum : 0.0);
}

void softmaxCrossEntropy(const KernelCall &call) {
  const Tensor &scores = call.in[0], &labels = call.in[1];
  if (scores.dtype != DType::F32)
    call.unsupported(scores.dtype);
  // log_prob = log_softmax over the class dim 1.
  int64_t n = scores.shape[0], c = scores.shape[1];
  int64_t inner = scores.numel() / (n * c);
  const float *in = scores.as<float>();
  float *logp = call.out[1].as<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < inner; ++i) {
      const float *row = in + b * c * inner + i;
      float max = row[0];
      for (int64_t k = 1; k < c; ++k)
        max = std::max(max, row[k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < c; ++k)
        sum += std::exp(row[k * inner] - max); // float exp, double sum
      float logSum = static_cast<float>(std::log(sum));
      for (int64_t k = 0; k < c; ++k)
        logp[b * c * inner + k * inner + i] = row[k * inner] - max - logSum;
    }
  nll(call, logp, scores, labels, call.in.size() > 2 ? &call.in[2] : nullptr,
      call.out[0]);
}

void nllLoss(const KernelCall &call) {
  const Tensor &input = call.in[0];
  if (input.dtype != DType::F32)
    call.unsupported(input.dtype);
  nll(call, input.as<float>(), input, call.in[1],
      call.in.size() > 2 ? &call.in[2] : nullptr, call.out[0]);
}

} // namespace

void registerLossKernels(KernelTable &t) {
  t["softmax_cross_entropy"] = softmaxCrossEntropy;
  t["nll_loss"] = nllLoss;
}

} // namespace weft::rt
