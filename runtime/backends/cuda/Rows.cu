//===- Rows.cu - row kernels on the GPU: norms, softmax grads, losses -----===//
//
// A warp per row: the lanes stride the row, the row's sums are warp
// shuffles (double, as the CPU's), and the per-element formulas are
// RowMath.h's, shared with the CPU kernels. Column sums (layer_norm_grad's
// scale and bias gradients) and the losses' means go through per-chunk
// partial sums in the scratch buffer, combined in a fixed order: every
// result is deterministic.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Launch.cuh"
#include "Storage.cuh"

#include "../../kernels/ElementwiseMath.h"
#include "../../kernels/RowMath.h"

namespace weft::rt::cuda {

namespace {

__device__ inline int64_t rowBase(int64_t r, int64_t dim, int64_t inner) {
  return r / inner * dim * inner + r % inner;
}

//===----------------------------------------------------------------------===//
// softmax_grad, log_softmax_grad
//===----------------------------------------------------------------------===//

template <Storage S, bool Log>
__global__ void softmaxGradKernel(const void *y, const void *dy, void *dx,
                                  int64_t rows, int64_t dim, int64_t inner) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = rowBase(r, dim, inner);
    double dot = 0;
    for (int64_t d = lane; d < dim; d += 32) {
      int64_t k = base + d * inner;
      dot += softmaxGradTerm<Log>(load<S>(y, k), load<S>(dy, k));
    }
    dot = warpSum(dot);
    for (int64_t d = lane; d < dim; d += 32) {
      int64_t k = base + d * inner;
      store<S>(dx, k, softmaxGradAt<Log>(load<S>(y, k), load<S>(dy, k), dot));
    }
  }
}

template <bool Log>
void softmaxGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &y = call.in[0];
  AxisView rows(y.shape, call.i("axis"));
  if (y.numel() == 0)
    return;
  byStorage(call, y.dtype, [&]<Storage S>() {
    WEFT_LAUNCH((softmaxGradKernel<S, Log>), warpGrid(rows.rows()), kThreads,
                ctx.stream, y.data, call.in[1].data, call.out[0].data,
                rows.rows(), rows.dim, rows.inner);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// scale_mask_softmax_grad: softmaxGradKernel's row over the last dim,
/// then the unfused where and div: the gradient rounded to S, 0 where the
/// mask row (r mod `queries`) is set, divided by `divisor`.
template <Storage S>
__global__ void scaleMaskSoftmaxGradKernel(const void *y, const void *dy,
                                           const uint8_t *mask, void *dx,
                                           int64_t rows, int64_t dim,
                                           int64_t queries, float divisor) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = r * dim;
    const uint8_t *masked = mask + r % queries * dim;
    double dot = 0;
    for (int64_t d = lane; d < dim; d += 32)
      dot +=
          softmaxGradTerm<false>(load<S>(y, base + d), load<S>(dy, base + d));
    dot = warpSum(dot);
    for (int64_t d = lane; d < dim; d += 32) {
      float g = masked[d]
                    ? 0.0f
                    : rounded<S>(softmaxGradAt<false>(
                          load<S>(y, base + d), load<S>(dy, base + d), dot));
      store<S>(dx, base + d, g / divisor);
    }
  }
}

void scaleMaskSoftmaxGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &y = call.in[0];
  int64_t dim = y.shape.back(), queries = y.shape.end()[-2];
  if (y.numel() == 0)
    return;
  int64_t rows = y.numel() / dim;
  byStorage(call, y.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(scaleMaskSoftmaxGradKernel<S>, warpGrid(rows), kThreads,
                ctx.stream, y.data, call.in[1].data,
                static_cast<const uint8_t *>(call.in[2].data), call.out[0].data,
                rows, dim, queries, float(call.f("divisor")));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// layer_norm, add_layer_norm, layer_norm_grad
//===----------------------------------------------------------------------===//

/// A normalisation's rows: input 0 over the dims [axis, rank) of `inner`
/// elements each (the `axis` attribute), `rows` of them.
struct NormRows {
  int64_t rows = 0, inner = 1;
};
NormRows normRows(const KernelCall &call) {
  const Tensor &x = call.in[0];
  NormRows r;
  for (int64_t d = call.i("axis"); d < x.rank(); ++d)
    r.inner *= x.shape[d];
  r.rows = r.inner ? x.numel() / r.inner : 0;
  return r;
}

/// Where scale and bias are read for element j of the normalised block:
/// null when they cover it whole (element j), else device tables of the
/// element each broadcasts to j (broadcastIndex, as the CPU kernel).
struct AffineIndex {
  const int64_t *scale = nullptr, *bias = nullptr;
};

AffineIndex affineIndex(const KernelCall &call, const Context &ctx,
                        const Tensor &x, int64_t axis, int64_t inner,
                        size_t affine) {
  bool whole = true;
  for (size_t k = affine; k < call.in.size(); ++k)
    whole &= call.in[k].numel() == inner;
  if (whole)
    return {};
  std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  std::vector<int64_t> table =
      broadcastIndex(call.in[affine].shape, normalized);
  bool bias = call.in.size() > affine + 1;
  if (bias) {
    std::vector<int64_t> b =
        broadcastIndex(call.in[affine + 1].shape, normalized);
    table.insert(table.end(), b.begin(), b.end());
  }
  const int64_t *device = ctx.scratch->upload(table, ctx.stream);
  return {device, bias ? device + inner : nullptr};
}

/// The residual add of add_layer_norm: x + residual, rounded to S, is
/// written to `sum` and normalised (null for a plain layer_norm).
struct Residual {
  const void *other = nullptr;
  void *sum = nullptr;
};

/// S: x and y; P: scale and bias (S, or f32 beside 16-bit S: mixed
/// precision's f32 affine parameters). With a residual, the row normalised
/// is the sum this thread stored, read back as stored (rounded): the
/// layer_norm of the add's output, to the bit.
template <Storage S, Storage P>
__global__ void
layerNormKernel(const void *x, Residual residual, const void *scale,
                const void *bias, AffineIndex at, void *y, float *mean,
                float *invStd, int64_t rows, int64_t inner, double eps) {
  int lane = threadIdx.x % 32;
  const void *row = residual.sum ? residual.sum : x;
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = r * inner;
    double sum = 0, squares = 0;
    for (int64_t j = lane; j < inner; j += 32) {
      if (residual.sum)
        store<S>(residual.sum, base + j,
                 math::Add()(load<S>(x, base + j),
                             load<S>(residual.other, base + j)));
      sum += load<S>(row, base + j);
    }
    double mu = warpSum(sum) / double(inner);
    for (int64_t j = lane; j < inner; j += 32) {
      double d = load<S>(row, base + j) - mu;
      squares += d * d;
    }
    double rstd = layerNormRstd(warpSum(squares), inner, eps);
    if (lane == 0) {
      mean[r] = float(mu);
      invStd[r] = float(rstd);
    }
    for (int64_t j = lane; j < inner; j += 32) {
      float g = load<P>(scale, at.scale ? at.scale[j] : j);
      float b = bias ? load<P>(bias, at.bias ? at.bias[j] : j) : 0.0f;
      store<S>(y, base + j,
               float(layerNormAt(load<S>(row, base + j), mu, rstd, g, b)));
    }
  }
}

/// layer_norm (x, scale, bias?) -> (y, mean, inv_std_dev), and
/// add_layer_norm (x, residual, scale, bias?) -> (the same, sum): the
/// affine inputs start at `affine`.
void normalizeRows(const KernelCall &call, const Context &ctx, size_t affine,
                   Residual residual) {
  const Tensor &x = call.in[0];
  auto [rows, inner] = normRows(call);
  if (rows == 0)
    return;
  AffineIndex at = affineIndex(call, ctx, x, call.i("axis"), inner, affine);
  const void *bias =
      call.in.size() > affine + 1 ? call.in[affine + 1].data : nullptr;
  byStorage(call, x.dtype, [&]<Storage S>() {
    byStorage(call, call.in[affine].dtype, [&]<Storage P>() {
      WEFT_LAUNCH((layerNormKernel<S, P>), warpGrid(rows), kThreads, ctx.stream,
                  x.data, residual, call.in[affine].data, bias, at,
                  call.out[0].data, call.out[1].as<float>(),
                  call.out[2].as<float>(), rows, inner, call.f("epsilon"));
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

void layerNorm(const KernelCall &call, const Context &ctx) {
  normalizeRows(call, ctx, 1, {});
}

void addLayerNorm(const KernelCall &call, const Context &ctx) {
  normalizeRows(call, ctx, 2, {call.in[1].data, call.out[3].data});
}

/// dx per row; plus `acc` (the input's gradient from its other readers),
/// when given, before the one rounding.
template <Storage S, Storage P>
__global__ void layerNormGradKernel(const void *x, const void *scale,
                                    const float *mean, const float *invStd,
                                    const void *dy, const void *acc, void *dx,
                                    int64_t rows, int64_t inner) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = r * inner;
    double mu = mean[r], rstd = invStd[r], meanG = 0, meanGX = 0;
    for (int64_t j = lane; j < inner; j += 32) {
      double xhat = (load<S>(x, base + j) - mu) * rstd;
      double g = double(load<S>(dy, base + j)) * load<P>(scale, j);
      meanG += g;
      meanGX += g * xhat;
    }
    meanG = warpSum(meanG) / double(inner);
    meanGX = warpSum(meanGX) / double(inner);
    for (int64_t j = lane; j < inner; j += 32) {
      double xhat = (load<S>(x, base + j) - mu) * rstd;
      double g = double(load<S>(dy, base + j)) * load<P>(scale, j);
      double d = layerNormGradAt(xhat, g, rstd, meanG, meanGX);
      store<S>(dx, base + j,
               float(acc ? d + double(load<S>(acc, base + j)) : d));
    }
  }
}

/// Rows per partial sum of the column sums.
constexpr int64_t kChunk = 256;

/// Scratch for `sums` column sums of `inner` columns over `rows` rows in
/// chunks of kChunk: partial[(sum * chunks + c) * inner + j].
struct ColumnPartials {
  int64_t chunks;
  double *partial;
};
ColumnPartials columnPartials(const Context &ctx, int64_t rows, int64_t inner,
                              int64_t sums) {
  int64_t chunks = (rows + kChunk - 1) / kChunk;
  return {chunks, static_cast<double *>(ctx.scratch->get(
                      sums * chunks * inner * sizeof(double), ctx.stream))};
}

/// Partial column sums of dy xhat and dy over kChunk rows each:
/// partial[c][j] and partial[chunks + c][j].
template <Storage S>
__global__ void layerNormColumnsKernel(const void *x, const float *mean,
                                       const float *invStd, const void *dy,
                                       double *partial, int64_t rows,
                                       int64_t inner, int64_t chunks) {
  WEFT_GRID_STRIDE(i, chunks * inner) {
    int64_t c = i / inner, j = i % inner;
    double sumScale = 0, sumBias = 0;
    for (int64_t r = c * kChunk; r < rows && r < (c + 1) * kChunk; ++r) {
      double g = load<S>(dy, r * inner + j);
      sumScale += g * (load<S>(x, r * inner + j) - mean[r]) * invStd[r];
      sumBias += g;
    }
    partial[i] = sumScale;
    partial[chunks * inner + i] = sumBias;
  }
}

template <Storage P>
__global__ void layerNormColumnsDone(const double *partial, void *dscale,
                                     void *dbias, int64_t inner,
                                     int64_t chunks) {
  WEFT_GRID_STRIDE(j, inner) {
    double sumScale = 0, sumBias = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      sumScale += partial[c * inner + j];
      sumBias += partial[(chunks + c) * inner + j];
    }
    store<P>(dscale, j, float(sumScale));
    store<P>(dbias, j, float(sumBias));
  }
}

void layerNormGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0];
  // The plan loader checked that the scale covers the normalised dims.
  auto [rows, inner] = normRows(call);
  if (rows == 0)
    return;
  auto [chunks, partial] = columnPartials(ctx, rows, inner, 2);
  const auto *mean = call.in[2].as<float>(), *invStd = call.in[3].as<float>();
  byStorage(call, x.dtype, [&]<Storage S>() {
    byStorage(call, call.in[1].dtype, [&]<Storage P>() {
      WEFT_LAUNCH((layerNormGradKernel<S, P>), warpGrid(rows), kThreads,
                  ctx.stream, x.data, call.in[1].data, mean, invStd,
                  call.in[4].data,
                  call.in.size() > 5 ? call.in[5].data : nullptr,
                  call.out[0].data, rows, inner);
      WEFT_LAUNCH(layerNormColumnsKernel<S>, grid(chunks * inner), kThreads,
                  ctx.stream, x.data, mean, invStd, call.in[4].data, partial,
                  rows, inner, chunks);
      WEFT_LAUNCH(layerNormColumnsDone<P>, grid(inner), kThreads, ctx.stream,
                  partial, call.out[1].data, call.out[2].data, inner, chunks);
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// rms_norm, rms_norm_grad
//===----------------------------------------------------------------------===//

/// One warp per row: the sum of squares in double, y = x inv_rms scale
/// (RowMath.h's rule, as the CPU kernel).
template <Storage S>
__global__ void rmsNormKernel(const void *x, const void *scale, void *y,
                              float *invRms, int64_t rows, int64_t inner,
                              double eps) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = r * inner;
    double squares = 0;
    for (int64_t j = lane; j < inner; j += 32) {
      double v = load<S>(x, base + j);
      squares += v * v;
    }
    double rms = rmsNormInvRms(warpSum(squares), inner, eps);
    if (lane == 0)
      invRms[r] = float(rms);
    for (int64_t j = lane; j < inner; j += 32)
      store<S>(y, base + j,
               float(double(load<S>(x, base + j)) * rms *
                     double(load<S>(scale, j))));
  }
}

void rmsNorm(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0];
  auto [rows, inner] = normRows(call);
  if (rows == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(rmsNormKernel<S>, warpGrid(rows), kThreads, ctx.stream, x.data,
                call.in[1].data, call.out[0].data, call.out[1].as<float>(),
                rows, inner, call.f("epsilon"));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// dx per row: inv_rms (g - xhat mean(g xhat)).
template <Storage S>
__global__ void rmsNormGradKernel(const void *x, const void *scale,
                                  const float *invRms, const void *dy, void *dx,
                                  int64_t rows, int64_t inner) {
  int lane = threadIdx.x % 32;
  WEFT_WARP_STRIDE(r, rows) {
    int64_t base = r * inner;
    double rms = invRms[r], meanGX = 0;
    for (int64_t j = lane; j < inner; j += 32)
      meanGX += double(load<S>(dy, base + j)) * load<S>(scale, j) *
                load<S>(x, base + j) * rms;
    meanGX = warpSum(meanGX) / double(inner);
    for (int64_t j = lane; j < inner; j += 32) {
      double xhat = load<S>(x, base + j) * rms;
      double g = double(load<S>(dy, base + j)) * load<S>(scale, j);
      store<S>(dx, base + j, float(rmsNormGradAt(xhat, g, rms, meanGX)));
    }
  }
}

/// Partial column sums of dy xhat over kChunk rows each.
template <Storage S>
__global__ void rmsNormColumnsKernel(const void *x, const float *invRms,
                                     const void *dy, double *partial,
                                     int64_t rows, int64_t inner,
                                     int64_t chunks) {
  WEFT_GRID_STRIDE(i, chunks * inner) {
    int64_t c = i / inner, j = i % inner;
    double sum = 0;
    for (int64_t r = c * kChunk; r < rows && r < (c + 1) * kChunk; ++r)
      sum += double(load<S>(dy, r * inner + j)) * load<S>(x, r * inner + j) *
             invRms[r];
    partial[i] = sum;
  }
}

template <Storage S>
__global__ void rmsNormColumnsDone(const double *partial, void *dscale,
                                   int64_t inner, int64_t chunks) {
  WEFT_GRID_STRIDE(j, inner) {
    double sum = 0;
    for (int64_t c = 0; c < chunks; ++c)
      sum += partial[c * inner + j];
    store<S>(dscale, j, float(sum));
  }
}

void rmsNormGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0];
  auto [rows, inner] = normRows(call);
  if (rows == 0)
    return;
  auto [chunks, partial] = columnPartials(ctx, rows, inner, 1);
  const auto *invRms = call.in[2].as<float>();
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(rmsNormGradKernel<S>, warpGrid(rows), kThreads, ctx.stream,
                x.data, call.in[1].data, invRms, call.in[3].data,
                call.out[0].data, rows, inner);
    WEFT_LAUNCH(rmsNormColumnsKernel<S>, grid(chunks * inner), kThreads,
                ctx.stream, x.data, invRms, call.in[3].data, partial, rows,
                inner, chunks);
    WEFT_LAUNCH(rmsNormColumnsDone<S>, grid(inner), kThreads, ctx.stream,
                partial, call.out[1].data, inner, chunks);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

//===----------------------------------------------------------------------===//
// rotary, rotary_grad
//===----------------------------------------------------------------------===//

/// One thread per element: y = x cos + rotate(x) sin, or (Grad) dx = dy cos
/// - rotate(dy sin), RowMath.h's rotation as the CPU kernel's.
template <Storage S, bool Grad>
__global__ void rotaryKernel(const void *x, const void *cos, const void *sin,
                             void *y, int64_t n, int64_t d, bool interleaved,
                             Strided<1> table) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t j = i % d;
    RotaryPartner p = rotaryPartner(j, d, interleaved);
    int64_t partner = i - j + p.index, at[1], atPartner[1];
    table.offsets(i, at);
    table.offsets(partner, atPartner);
    double v = double(load<S>(x, i)) * load<S>(cos, at[0]);
    if (Grad)
      v -= p.sign * double(load<S>(x, partner)) * load<S>(sin, atPartner[0]);
    else
      v += p.sign * double(load<S>(x, partner)) * load<S>(sin, at[0]);
    store<S>(y, i, float(v));
  }
}

template <bool Grad> void rotary(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0];
  int64_t n = x.numel();
  if (n == 0)
    return;
  auto table = Strided<1>::of(call, x.shape,
                              {broadcastStrides(call.in[1].shape, x.shape)});
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH((rotaryKernel<S, Grad>), grid(n), kThreads, ctx.stream, x.data,
                call.in[1].data, call.in[2].data, call.out[0].data, n,
                x.shape.back(), call.flag("interleaved"), table);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerRowKernels(KernelTable &t) {
  t[Op::SoftmaxGrad] = softmaxGrad<false>;
  t[Op::ScaleMaskSoftmaxGrad] = scaleMaskSoftmaxGrad;
  t[Op::LogSoftmaxGrad] = softmaxGrad<true>;
  t[Op::LayerNorm] = layerNorm;
  t[Op::AddLayerNorm] = addLayerNorm;
  t[Op::LayerNormGrad] = layerNormGrad;
  t[Op::RmsNorm] = rmsNorm;
  t[Op::RmsNormGrad] = rmsNormGrad;
  t[Op::Rotary] = rotary<false>;
  t[Op::RotaryGrad] = rotary<true>;
}

} // namespace weft::rt::cuda
