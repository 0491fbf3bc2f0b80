//===- Backward.cpp - kernels of the backward-only ops
//---------------------===//
//
// relu_grad, gelu_grad, gelu_tanh_grad, softmax_grad, log_softmax_grad,
// layer_norm_grad, dropout_grad, gather_grad (scatter-add) and
// softmax_cross_entropy_grad; their formulas are documented on the ops
// (docs/generated/Dialects/Weft.md).
//
//===----------------------------------------------------------------------===//

#include "ClassTargets.h"
#include "CpuVector.h"
#include "ElementwiseMath.h"
#include "RowMath.h"

#include <cmath>
#include <cstring>

namespace weft::rt {

namespace {

/// An elementwise gradient of (x, dy) (ElementwiseMath.h, shared with the
/// CUDA kernels), in a vector loop (CpuVector.h).
template <typename Op> void elementwiseGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    vec::map(x.as<T>(), dy.as<T>(), dx.as<T>(), x.numel(), Op());
  });
}

template <bool Log> void softmaxGrad(const KernelCall &call) {
  const Tensor &y = call.in[0], &dy = call.in[1], &dx = call.out[0];
  auto [outer, dim, inner] = AxisView(y.shape, call.i("axis"));
  dispatchFloat(call, y.dtype, [&]<typename T>() {
    const T *py = y.as<T>(), *pg = dy.as<T>();
    T *out = dx.as<T>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t base = o * dim * inner + i;
        double dot = 0;
        for (int64_t d = 0; d < dim; ++d) {
          int64_t k = base + d * inner;
          dot += softmaxGradTerm<Log>(py[k], pg[k]);
        }
        for (int64_t d = 0; d < dim; ++d) {
          int64_t k = base + d * inner;
          out[k] = softmaxGradAt<Log>(py[k], pg[k], dot);
        }
      }
  });
}

void layerNormGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &scale = call.in[1], &dy = call.in[4];
  int64_t axis = call.i("axis"), outer = 1, inner = 1;
  for (int64_t i = 0; i < x.rank(); ++i)
    (i < axis ? outer : inner) *= x.shape[i];
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    // The statistics are x's dtype here (f32, or f64 beside f64).
    const T *mean = call.in[2].as<T>(), *invStd = call.in[3].as<T>();
    const T *px = x.as<T>(), *pg = scale.as<T>(), *pdy = dy.as<T>();
    T *dx = call.out[0].as<T>(), *dscale = call.out[1].as<T>(),
      *dbias = call.out[2].as<T>();
    // accumulate: the input's gradient from its other readers, added
    // before the one rounding.
    const T *acc = call.in.size() > 5 ? call.in[5].as<T>() : nullptr;
    std::vector<double> accScale(inner, 0.0), accBias(inner, 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      const T *row = px + o * inner, *grow = pdy + o * inner;
      double mu = mean[o], rstd = invStd[o], meanG = 0, meanGX = 0;
#pragma omp simd reduction(+ : meanG, meanGX)
      for (int64_t j = 0; j < inner; ++j) {
        double xhat = (row[j] - mu) * rstd, g = grow[j] * pg[j];
        meanG += g;
        meanGX += g * xhat;
        accScale[j] += grow[j] * xhat;
        accBias[j] += grow[j];
      }
      meanG /= inner;
      meanGX /= inner;
      for (int64_t j = 0; j < inner; ++j) {
        double xhat = (row[j] - mu) * rstd, g = grow[j] * pg[j];
        double d = layerNormGradAt(xhat, g, rstd, meanG, meanGX);
        dx[o * inner + j] =
            static_cast<T>(acc ? d + double(acc[o * inner + j]) : d);
      }
    }
    for (int64_t j = 0; j < inner; ++j) {
      dscale[j] = static_cast<T>(accScale[j]);
      dbias[j] = static_cast<T>(accBias[j]);
    }
  });
}

/// glu_grad (gate, up, dy) -> (dgate, dup), elementwise.
void gluGrad(const KernelCall &call) {
  const Tensor &g = call.in[0], &u = call.in[1], &dy = call.in[2];
  math::withGlu(*ops::gluActivationNamed(call.s("activation")), [&](auto op) {
    dispatchFloat(call, g.dtype, [&]<typename T>() {
      const T *pg = g.as<T>(), *pu = u.as<T>(), *pdy = dy.as<T>();
      T *dg = call.out[0].as<T>(), *du = call.out[1].as<T>();
      int64_t n = g.numel();
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) {
        dg[i] = static_cast<T>(op.gateGrad(pg[i], pu[i], pdy[i]));
        du[i] = static_cast<T>(op.upGrad(pg[i], pdy[i]));
      }
    });
  });
}

/// (x, scale, inv_rms, dy) -> (dx, dscale): per row mean(g xhat) in
/// double, then dx; dscale's column sums in double over all rows.
void rmsNormGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &scale = call.in[1], &stats = call.in[2],
               &dy = call.in[3];
  int64_t axis = call.i("axis"), outer = 1, inner = 1;
  for (int64_t i = 0; i < x.rank(); ++i)
    (i < axis ? outer : inner) *= x.shape[i];
  auto invRms = [&](int64_t o) {
    return stats.dtype == DType::F64 ? stats.as<double>()[o]
                                     : double(stats.as<float>()[o]);
  };
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *px = x.as<T>(), *pg = scale.as<T>(), *pdy = dy.as<T>();
    T *dx = call.out[0].as<T>(), *dscale = call.out[1].as<T>();
    std::vector<double> sumScale(inner, 0.0);
    for (int64_t o = 0; o < outer; ++o) {
      const T *row = px + o * inner, *grow = pdy + o * inner;
      double r = invRms(o), meanGX = 0;
#pragma omp simd reduction(+ : meanGX)
      for (int64_t j = 0; j < inner; ++j) {
        double xhat = row[j] * r;
        meanGX += double(grow[j]) * pg[j] * xhat;
        sumScale[j] += grow[j] * xhat;
      }
      meanGX /= inner;
      for (int64_t j = 0; j < inner; ++j)
        dx[o * inner + j] = static_cast<T>(
            rmsNormGradAt(row[j] * r, double(grow[j]) * pg[j], r, meanGX));
    }
    for (int64_t j = 0; j < inner; ++j)
      dscale[j] = static_cast<T>(sumScale[j]);
  });
}

void dropoutGrad(const KernelCall &call) {
  const Tensor &dy = call.in[0], &dx = call.out[0];
  const uint8_t *mask = call.in[1].as<uint8_t>();
  double scale = 1.0 / (1.0 - call.f("ratio"));
  dispatchFloat(call, dy.dtype, [&]<typename T>() {
    const T *g = dy.as<T>();
    T *out = dx.as<T>();
    for (int64_t i = 0, n = dy.numel(); i < n; ++i)
      out[i] = mask[i] ? static_cast<T>(g[i] * scale) : T(0);
  });
}

void gatherGrad(const KernelCall &call) {
  const Tensor &dy = call.in[0], &indices = call.in[1], &dx = call.out[0];
  int64_t axis = call.i("axis"), dim = dx.shape[axis];
  int64_t outer = 1, row = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= dx.shape[d];
  for (int64_t d = axis + 1; d < dx.rank(); ++d)
    row *= dx.shape[d];
  int64_t count = indices.numel();
  dispatchFloat(call, dy.dtype, [&]<typename T>() {
    T *out = dx.as<T>();
    const T *g = dy.as<T>();
    std::memset(out, 0, dx.bytes());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < count; ++k) {
        int64_t i = indices.dtype == DType::I64 ? indices.as<int64_t>()[k]
                                                : indices.as<int32_t>()[k];
        if (i < -dim || i >= dim)
          call.fail("index " + std::to_string(i) + " out of range");
        i = i < 0 ? i + dim : i;
        T *dst = out + (o * dim + i) * row;
        const T *src = g + (o * count + k) * row;
        for (int64_t j = 0; j < row; ++j)
          dst[j] += src[j];
      }
  });
}

/// One contiguous row of softmax_cross_entropy_grad in a vector loop
/// (CpuVector.h): the class scores x (or log-probabilities, without
/// `fromScores`), the row's log-sum-exp, its target class t (-1: none) and
/// scale.
template <typename T>
WEFT_CPU_CLONES void crossEntropyGradRow(const T *x, T lse, bool fromScores,
                                         int64_t t, double scale, T *out,
                                         int64_t classes) {
  for (int64_t ch = 0; ch < classes; ++ch) {
    T lp = fromScores ? crossEntropyLogProb(x[ch], lse) : x[ch];
    out[ch] = static_cast<T>(crossEntropyGradAt(lp, ch == t, scale));
  }
}

/// (log_prob, labels, grad[, weights]), or with log_sum_exp (scores,
/// labels, grad[, weights], log_sum_exp): log_prob = scores - log_sum_exp.
template <typename T> void softmaxCrossEntropyGrad(const KernelCall &call) {
  const Tensor &input = call.in[0];
  bool fromScores = call.flag("log_sum_exp");
  size_t weights = fromScores ? 5 : 4;
  ClassTargets targets(call, input, call.in[1],
                       call.in.size() == weights ? &call.in[3] : nullptr);
  const T *in = input.as<T>(), *dl = call.in[2].as<T>();
  const T *lse = fromScores ? call.in.back().as<T>() : nullptr;
  T *out = call.out[0].as<T>();
  // d/d scores = (softmax - onehot(target)) * scale; 0 for ignored targets.
  for (int64_t k = 0; k < targets.n * targets.inner; ++k) {
    int64_t t = targets.cls[k];
    double scale = t < 0 ? 0.0 : targets.scale(dl, k);
    if (targets.inner == 1) { // [N, C]: the row is contiguous
      int64_t first = k * targets.classes;
      crossEntropyGradRow(in + first, lse ? lse[k] : T(0), lse != nullptr, t,
                          scale, out + first, targets.classes);
      continue;
    }
    for (int64_t ch = 0; ch < targets.classes; ++ch) {
      int64_t e = targets.at(k, ch);
      T lp = lse ? crossEntropyLogProb(in[e], lse[k]) : in[e];
      out[e] = static_cast<T>(crossEntropyGradAt(lp, ch == t, scale));
    }
  }
}

/// batch_norm's input, scale and bias gradients (formulas on the op).
void batchNormGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &dy = call.in[4];
  bool training = call.b("training");
  double eps = call.f("epsilon");
  int64_t n = x.shape[0], c = x.shape[1], spatial = 1;
  for (int64_t i = 2; i < x.rank(); ++i)
    spatial *= x.shape[i];
  double count = double(n * spatial);
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *px = x.as<T>(), *scale = call.in[1].as<T>(),
            *mean = call.in[2].as<T>(), *var = call.in[3].as<T>(),
            *g = dy.as<T>();
    T *dx = call.out[0].as<T>(), *dscale = call.out[1].as<T>(),
      *dbias = call.out[2].as<T>();
    for (int64_t ch = 0; ch < c; ++ch) {
      auto at = [&](int64_t b, int64_t s) {
        return (b * c + ch) * spatial + s;
      };
      double mu = mean[ch], sigma2 = var[ch];
      // Each plane's sums in vector lanes, in double (as batch_norm's).
      if (training) {
        double sum = 0, sq = 0;
        for (int64_t b = 0; b < n; ++b) {
          const T *plane = px + at(b, 0);
#pragma omp simd reduction(+ : sum)
          for (int64_t s = 0; s < spatial; ++s)
            sum += plane[s];
        }
        mu = sum / count;
        for (int64_t b = 0; b < n; ++b) {
          const T *plane = px + at(b, 0);
#pragma omp simd reduction(+ : sq)
          for (int64_t s = 0; s < spatial; ++s) {
            double d = plane[s] - mu;
            sq += d * d;
          }
        }
        sigma2 = sq / count;
      }
      double rstd = 1.0 / std::sqrt(sigma2 + eps), sumG = 0, sumGX = 0;
      for (int64_t b = 0; b < n; ++b) {
        const T *plane = px + at(b, 0), *grad = g + at(b, 0);
#pragma omp simd reduction(+ : sumG, sumGX)
        for (int64_t s = 0; s < spatial; ++s) {
          double xhat = (plane[s] - mu) * rstd;
          sumG += grad[s];
          sumGX += grad[s] * xhat;
        }
      }
      dbias[ch] = static_cast<T>(sumG);
      dscale[ch] = static_cast<T>(sumGX);
      double a = scale[ch] * rstd;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t s = 0; s < spatial; ++s) {
          int64_t i = at(b, s);
          double xhat = (px[i] - mu) * rstd;
          dx[i] = static_cast<T>(
              training ? a / count * (count * g[i] - sumG - xhat * sumGX)
                       : a * g[i]);
        }
    }
  });
}

void clipGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  math::Clip op = math::Clip::of(call);
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>(), *g = dy.as<T>();
    T *out = dx.as<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      out[i] = op.grad(in[i], g[i]);
  });
}

template <typename T> void nllLossGrad(const KernelCall &call) {
  const Tensor &input = call.in[0];
  ClassTargets targets(call, input, call.in[1],
                       call.in.size() > 3 ? &call.in[3] : nullptr);
  const T *dl = call.in[2].as<T>();
  T *out = call.out[0].as<T>();
  std::memset(out, 0, call.out[0].bytes());
  for (int64_t k = 0; k < targets.n * targets.inner; ++k)
    if (targets.cls[k] >= 0)
      out[targets.at(k, targets.cls[k])] =
          static_cast<T>(-targets.scale(dl, k));
}

/// gather_elements_grad: zeros, then each dy element added where its
/// index read (row-major order: for each element, its readers in order
/// along the axis, as the CUDA kernel sums them).
void gatherElementsGrad(const KernelCall &call) {
  const Tensor &dy = call.in[0], &dx = call.out[0];
  dispatchFloat(call, dy.dtype, [&]<typename T>() {
    const T *g = dy.as<T>();
    T *out = dx.as<T>();
    std::fill(out, out + dx.numel(), T(0));
    forEachElementRead(call, call.in[1], dx.shape, call.i("axis"),
                       [&](int64_t p, int64_t q) { out[q] += g[p]; });
  });
}

} // namespace

void registerBackwardKernels(KernelTable &t) {
  t[Op::ClipGrad] = clipGrad;
  t[Op::NllLossGrad] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { nllLossGrad<T>(c); });
  };
  t[Op::BatchNormGrad] = batchNormGrad;
  t[Op::ReluGrad] = elementwiseGrad<math::ReluGrad>;
  t[Op::GeluGrad] = elementwiseGrad<math::GeluGrad>;
  t[Op::GeluTanhGrad] = elementwiseGrad<math::GeluTanhGrad>;
  t[Op::SoftmaxGrad] = softmaxGrad<false>;
  t[Op::LogSoftmaxGrad] = softmaxGrad<true>;
  t[Op::LayerNormGrad] = layerNormGrad;
  t[Op::RmsNormGrad] = rmsNormGrad;
  t[Op::GluGrad] = gluGrad;
  t[Op::DropoutGrad] = dropoutGrad;
  t[Op::GatherGrad] = gatherGrad;
  t[Op::GatherElementsGrad] = gatherElementsGrad;
  t[Op::SoftmaxCrossEntropyGrad] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype,
                  [&]<typename T>() { softmaxCrossEntropyGrad<T>(c); });
  };
}

} // namespace weft::rt
