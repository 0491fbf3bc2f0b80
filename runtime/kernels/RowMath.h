//===- RowMath.h - row kernels' math, host/device ---------------*- C++ -*-===//
//
// The math of the kernels that work a row at a time, written once for the
// CPU kernels and the CUDA ones. The row sums are the caller's (a loop on
// the CPU, a warp's shuffles on the GPU); the formulas here turn them into
// elements.
//
// ONNX Softmax-13 and LogSoftmax-13, one row at a time: the maximum is
// subtracted first (exp never overflows), the sum accumulates in double,
// the result is exp(x - max) / sum (recomputed, not stored and rescaled:
// a 16-bit output rounds once) or x - max - log(sum). Written once for the
// CPU kernel (Normalization.cpp, every row) and the CUDA one (a row per
// thread); `x(d)` reads element d of the row as T, `y(d, v)` writes it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_ROWMATH_H
#define WEFT_RUNTIME_KERNELS_ROWMATH_H

#include "Half.h"

#include <cmath>
#include <cstdint>

namespace weft::rt {

/// The row's constant from its sum of exp(x - max) (accumulated in
/// double): log(sum) for log_softmax, 1 / sum for softmax.
template <bool Log, typename T>
WEFT_HOST_DEVICE T softmaxRowConstant(double sum) {
  using std::log;
  return Log ? static_cast<T>(log(sum)) : static_cast<T>(1.0 / sum);
}
/// One output element: x - max - log(sum), or exp(x - max) / sum.
template <bool Log, typename T>
WEFT_HOST_DEVICE T softmaxAt(T x, T max, T constant) {
  using std::exp;
  return Log ? x - max - constant : static_cast<T>(exp(x - max)) * constant;
}

/// The row's max and the sum of exp(x - max), accumulated in double.
template <typename T, typename In>
WEFT_HOST_DEVICE void softmaxRowSums(int64_t dim, In x, T &max, double &sum) {
  using std::exp;
  max = x(0);
  for (int64_t d = 1; d < dim; ++d) {
    T v = x(d);
    max = v > max ? v : max;
  }
  sum = 0;
  for (int64_t d = 0; d < dim; ++d)
    sum += exp(x(d) - max);
}

template <bool Log, typename T, typename In, typename Out>
WEFT_HOST_DEVICE void softmaxRow(int64_t dim, In x, Out y) {
  T max;
  double sum;
  softmaxRowSums<T>(dim, x, max, sum);
  T constant = softmaxRowConstant<Log, T>(sum);
  for (int64_t d = 0; d < dim; ++d)
    y(d, softmaxAt<Log>(x(d), max, constant));
}

/// The row sum softmax_grad needs, one element's term: dy y (softmax) or
/// dy (log_softmax).
template <bool Log, typename T>
WEFT_HOST_DEVICE double softmaxGradTerm(T y, T dy) {
  return Log ? double(dy) : double(dy * y);
}
/// dx from the row sum `dot`: softmax y (dy - dot); log_softmax
/// dy - exp(y) dot (the Jacobian-vector products of Softmax-13 and
/// LogSoftmax-13).
template <bool Log, typename T>
WEFT_HOST_DEVICE T softmaxGradAt(T y, T dy, double dot) {
  using std::exp;
  return Log ? static_cast<T>(dy - exp(y) * dot)
             : static_cast<T>(y * (dy - dot));
}

/// LayerNormalization-17 (Ba et al. 2016): 1 / sqrt(var + eps) from the
/// row's sum of squared deviations over `n` elements (population variance).
WEFT_HOST_DEVICE inline double layerNormRstd(double squares, int64_t n,
                                             double eps) {
  using std::sqrt;
  return 1.0 / sqrt(squares / double(n) + eps);
}
/// y = (x - mean) rstd scale + bias.
WEFT_HOST_DEVICE inline double layerNormAt(double x, double mean, double rstd,
                                           double scale, double bias) {
  return (x - mean) * rstd * scale + bias;
}
/// layer_norm_grad's dx: rstd (g - mean(g) - xhat mean(g xhat)), g = dy
/// scale, xhat = (x - mean) rstd; the row means are the caller's.
WEFT_HOST_DEVICE inline double layerNormGradAt(double xhat, double g,
                                               double rstd, double meanG,
                                               double meanGX) {
  return rstd * (g - meanG - xhat * meanGX);
}

/// RMSNormalization-23 (Zhang & Sennrich 2019): 1 / sqrt(mean(x^2) + eps)
/// from the row's sum of squares over `n` elements.
WEFT_HOST_DEVICE inline double rmsNormInvRms(double squares, int64_t n,
                                             double eps) {
  using std::sqrt;
  return 1.0 / sqrt(squares / double(n) + eps);
}
/// rms_norm_grad's dx: inv_rms (g - xhat mean(g xhat)), g = dy scale, xhat
/// = x inv_rms; the row mean is the caller's.
WEFT_HOST_DEVICE inline double rmsNormGradAt(double xhat, double g,
                                             double invRms, double meanGX) {
  return invRms * (g - xhat * meanGX);
}

/// rotary's rotation of a row of `d` elements (d even): element j of
/// rotate(x) is sign * x[partner] (RotaryOp: the half-split layout's
/// cat(-x[d/2:], x[:d/2]), or with `interleaved` the pairs'
/// (-x[2i+1], x[2i])). rotate^T = -rotate.
struct RotaryPartner {
  int64_t index;
  int sign;
};
WEFT_HOST_DEVICE inline RotaryPartner rotaryPartner(int64_t j, int64_t d,
                                                    bool interleaved) {
  if (interleaved)
    return j % 2 == 0 ? RotaryPartner{j + 1, -1} : RotaryPartner{j - 1, 1};
  int64_t half = d / 2;
  return j < half ? RotaryPartner{j + half, -1} : RotaryPartner{j - half, 1};
}

/// softmax_cross_entropy's log-sum-exp of a row (log_sum_exp: kept for the
/// backward instead of the log-probabilities), from its max and log(sum).
template <typename T>
WEFT_HOST_DEVICE T crossEntropyLogSumExp(T max, T logSum) {
  return max + logSum;
}
/// A log-probability recomputed from its score and the row's log-sum-exp.
template <typename T> WEFT_HOST_DEVICE T crossEntropyLogProb(T x, T lse) {
  return x - lse;
}

/// softmax_cross_entropy_grad's element: (softmax - onehot(target)) scale,
/// softmax = exp(log-probability).
WEFT_HOST_DEVICE inline double crossEntropyGradAt(double logp, bool target,
                                                  double scale) {
  using std::exp;
  return (exp(logp) - (target ? 1.0 : 0.0)) * scale;
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_ROWMATH_H
