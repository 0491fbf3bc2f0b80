//===- Normalization.cpp - softmax, layer/batch norm, dropout -------------===//

#include "CpuVector.h"
#include "DropoutMask.h"
#include "Kernel.h"
#include "RowMath.h"

#include <cmath>
#include <cstring>

namespace weft::rt {

namespace {

/// A contiguous row of softmax or log_softmax in vector loops (CpuVector.h):
/// softmaxRow's values, but exp(x - max) is stored by the sum's pass and
/// scaled in place (in T, so each element rounds as softmaxAt's).
template <bool Log, typename T>
void softmaxContiguousRow(const T *x, T *y, int64_t dim) {
  T max = vec::max(x, dim);
  double sum = vec::expSum(x, dim, max, Log ? nullptr : y);
  T constant = softmaxRowConstant<Log, T>(sum);
  if constexpr (Log)
    vec::map(x, y, dim, [=](T v) { return softmaxAt<true>(v, max, constant); });
  else
    vec::map(y, y, dim, [=](T e) { return e * constant; });
}

template <bool Log> void softmax(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  AxisView v(x.shape, call.i("axis"));
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>();
    T *out = y.as<T>();
    if (v.inner == 1) {
      for (int64_t o = 0; o < v.outer; ++o)
        softmaxContiguousRow<Log>(in + o * v.dim, out + o * v.dim, v.dim);
      return;
    }
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        const T *row = in + o * v.dim * v.inner + i;
        T *dst = out + o * v.dim * v.inner + i;
        softmaxRow<Log, T>(
            v.dim, [&](int64_t d) { return row[d * v.inner]; },
            [&](int64_t d, T value) { dst[d * v.inner] = value; });
      }
  });
}

void layerNorm(const KernelCall &call) {
  const Tensor &x = call.in[0], &scale = call.in[1];
  const Tensor *bias = call.in.size() > 2 ? &call.in[2] : nullptr;
  int64_t axis = call.i("axis");
  double eps = call.f("epsilon");
  std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.rank(); ++i)
    (i < axis ? outer : inner) *= x.shape[i];
  // Flat index within the normalised block -> scale/bias element.
  std::vector<int64_t> scaleIndex = broadcastIndex(scale.shape, normalized);
  std::vector<int64_t> biasIndex =
      bias ? broadcastIndex(bias->shape, normalized) : scaleIndex;
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    // The statistics: f32, f64 beside f64 x (NetworkSpecs.cpp).
    T *mean = call.out[1].as<T>(), *invStd = call.out[2].as<T>();
    const T *in = x.as<T>(), *g = scale.as<T>(),
            *bb = bias ? bias->as<T>() : nullptr;
    T *out = call.out[0].as<T>();
    // Scale and bias as whole rows, so the rows' loops run in vector lanes
    // (the sums in double, their order the lanes').
    std::vector<T> gRow(inner), bRow(inner, T(0));
    for (int64_t j = 0; j < inner; ++j) {
      gRow[j] = g[scaleIndex[j]];
      if (bb)
        bRow[j] = bb[biasIndex[j]];
    }
    for (int64_t o = 0; o < outer; ++o) {
      const T *row = in + o * inner;
      double sum = 0, sq = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < inner; ++j)
        sum += row[j];
      double mu = sum / inner;
#pragma omp simd reduction(+ : sq)
      for (int64_t j = 0; j < inner; ++j)
        sq += (row[j] - mu) * (row[j] - mu);
      double rstd = layerNormRstd(sq, inner, eps);
      mean[o] = static_cast<T>(mu);
      invStd[o] = static_cast<T>(rstd);
      T *dst = out + o * inner;
      for (int64_t j = 0; j < inner; ++j)
        dst[j] =
            static_cast<T>(layerNormAt(row[j], mu, rstd, gRow[j], bRow[j]));
    }
  });
}

/// RMSNormalization-23 over the trailing dims from `axis`: each row's sum
/// of squares in double (vector lanes), y = x inv_rms scale rounded once.
/// inv_rms is f32, or f64 beside f64 x.
void rmsNorm(const KernelCall &call) {
  const Tensor &x = call.in[0], &scale = call.in[1], &stats = call.out[1];
  int64_t axis = call.i("axis"), outer = 1, inner = 1;
  for (int64_t i = 0; i < x.rank(); ++i)
    (i < axis ? outer : inner) *= x.shape[i];
  double eps = call.f("epsilon");
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>(), *g = scale.as<T>();
    T *out = call.out[0].as<T>();
    for (int64_t o = 0; o < outer; ++o) {
      const T *row = in + o * inner;
      double squares = 0;
#pragma omp simd reduction(+ : squares)
      for (int64_t j = 0; j < inner; ++j)
        squares += double(row[j]) * row[j];
      double r = rmsNormInvRms(squares, inner, eps);
      if (stats.dtype == DType::F64)
        stats.as<double>()[o] = r;
      else
        stats.as<float>()[o] = static_cast<float>(r);
      T *dst = out + o * inner;
#pragma omp simd
      for (int64_t j = 0; j < inner; ++j)
        dst[j] = static_cast<T>(double(row[j]) * r * double(g[j]));
    }
  });
}

/// ONNX BatchNormalization-15. Training mode normalises with the batch
/// mean and population variance and returns
/// running = momentum * running + (1 - momentum) * batch, with the biased
/// batch variance (the ONNX reference, np.var) or the unbiased one
/// (unbiased_running_var, as torch). Each channel's running statistics are
/// read before they are written, so the update may be in place.
void batchNorm(const KernelCall &call) {
  const Tensor &x = call.in[0];
  bool unbiased = call.flag("unbiased_running_var");
  bool training = call.b("training");
  double eps = call.f("epsilon"), momentum = call.f("momentum");
  int64_t n = x.shape[0], c = x.shape[1], spatial = 1;
  for (int64_t i = 2; i < x.rank(); ++i)
    spatial *= x.shape[i];
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>(), *scale = call.in[1].as<T>(),
            *bias = call.in[2].as<T>(), *mean = call.in[3].as<T>(),
            *var = call.in[4].as<T>();
    T *out = call.out[0].as<T>(), *runMean = call.out[1].as<T>(),
      *runVar = call.out[2].as<T>();
    for (int64_t ch = 0; ch < c; ++ch) {
      double mu = mean[ch], sigma2 = var[ch];
      if (training) {
        double sum = 0, sq = 0, count = double(n * spatial);
        // Each plane's sums in vector lanes, in double.
        for (int64_t b = 0; b < n; ++b) {
          const T *plane = in + (b * c + ch) * spatial;
#pragma omp simd reduction(+ : sum)
          for (int64_t s = 0; s < spatial; ++s)
            sum += plane[s];
        }
        mu = sum / count;
        for (int64_t b = 0; b < n; ++b) {
          const T *plane = in + (b * c + ch) * spatial;
#pragma omp simd reduction(+ : sq)
          for (int64_t s = 0; s < spatial; ++s) {
            double d = plane[s] - mu;
            sq += d * d;
          }
        }
        sigma2 = sq / count;
        double batchVar = unbiased && count > 1 ? sq / (count - 1) : sigma2;
        runMean[ch] = static_cast<T>(momentum * mean[ch] + (1 - momentum) * mu);
        runVar[ch] =
            static_cast<T>(momentum * var[ch] + (1 - momentum) * batchVar);
      } else {
        runMean[ch] = mean[ch];
        runVar[ch] = var[ch];
      }
      double a = scale[ch] / std::sqrt(sigma2 + eps), shift = bias[ch] - a * mu;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t s = 0; s < spatial; ++s) {
          int64_t i = (b * c + ch) * spatial + s;
          out[i] = static_cast<T>(a * in[i] + shift);
        }
    }
  });
}

/// Dropout (DropoutMask.h: the mask bits, shared with the CUDA kernel).
void dropout(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  uint8_t *mask = call.out[1].as<uint8_t>();
  double ratio = call.f("ratio");
  bool active = call.b("training") && ratio > 0;
  int64_t count = x.numel();
  if (!active) {
    std::memcpy(y.data, x.data, x.bytes());
    std::memset(mask, 1, count);
    return;
  }
  DropoutMask bits = DropoutMask::of(call, x);
  // Four mask elements per Philox block; consecutive elements mostly share
  // one, so the last block is kept.
  int64_t cached = -1;
  PhiloxBlock block{};
  for (int64_t e = 0; e < count; ++e) {
    int64_t g = bits.global(e);
    if (g / 4 != cached) {
      cached = g / 4;
      block = bits.block(g);
    }
    mask[e] = bits.keeps(block, g);
  }
  double scale = 1.0 / (1.0 - ratio);
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>();
    T *out = y.as<T>();
    for (int64_t i = 0; i < count; ++i)
      out[i] = mask[i] ? static_cast<T>(in[i] * scale) : T(0);
  });
}

} // namespace

void registerNormalizationKernels(KernelTable &t) {
  t[Op::Softmax] = softmax<false>;
  t[Op::LogSoftmax] = softmax<true>;
  t[Op::LayerNorm] = layerNorm;
  t[Op::RmsNorm] = rmsNorm;
  t[Op::BatchNorm] = batchNorm;
  t[Op::Dropout] = dropout;
}

} // namespace weft::rt
