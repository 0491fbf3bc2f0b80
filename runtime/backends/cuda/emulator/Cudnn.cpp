//===- Cudnn.cpp - the cuDNN calls weft makes, on the host ----------------===//
//
// The CUDA emulator's cuDNN: the descriptor-API functions Convolution.cpp
// calls, with the semantics cuDNN's documentation gives them (cudnn_ops.h,
// cudnn_cnn.h), so the emulator checks how weft describes its
// convolutions and batch norms. Convolution is cross-correlation over
// NCHW (or NCDHW) tensors of any strides, with pads, strides, dilations
// and groups; forward, backward data and backward filter share one walk
// over the taps, accumulate in f32 and blend as alpha op + beta out.
// Spatial batch norm: the batch's mean and biased variance per channel,
// the running variance updated with the unbiased one (torch's), as cuDNN
// does. A descriptor that does not chain (output dims not the
// convolution's, channels not divisible by groups) is CUDNN_STATUS_BAD_PARAM,
// a mode weft never uses CUDNN_STATUS_NOT_SUPPORTED. f32 convolutions
// under a math type other than CUDNN_FMA_MATH multiply TF32-rounded
// operands, as TF32 tensor cores would. One algorithm is
// offered per pass, deterministic, with a small workspace (so the scratch
// path runs).
//
//===----------------------------------------------------------------------===//

#include "../Cudnn.h"

#include "Emulator.h"
#include "Values.h"

#include <algorithm>
#include <cmath>
#include <vector>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

struct cudnnContext {
  cudaStream_t stream = nullptr; ///< cudnnSetStream's
};
struct cudnnTensorStruct {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int> dims, strides;
};
struct cudnnFilterStruct {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  std::vector<int> dims;
};
struct cudnnConvolutionStruct {
  std::vector<int> pad, stride, dilation;
  cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

namespace weft::rt::cuda {

namespace {

using emulator::blendInto;
using emulator::Format;

constexpr size_t kWorkspace = 256; ///< bytes each pass asks for

/// The stream a handle's calls are enqueued on (null without a handle).
cudaStream_t streamOf(cudnnHandle_t h) { return h ? h->stream : nullptr; }

bool formatOf(cudnnDataType_t type, Format &format) {
  switch (type) {
  case CUDNN_DATA_FLOAT:
    format = Format::F32;
    return true;
  case CUDNN_DATA_BFLOAT16:
    format = Format::BF16;
    return true;
  case CUDNN_DATA_HALF:
    format = Format::F16;
    return true;
  default:
    return false;
  }
}

/// One convolution's taps: every (x, w, y) element triple it multiplies,
/// walked without storing them (a ResNet stem has 10^8).
struct Taps {
  Format format;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;

  Taps(cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
       cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd)
      : xd(xd), yd(yd), wd(wd), cd(cd) {
    const std::vector<int> &xs = xd->dims, &ws = wd->dims, &ys = yd->dims;
    size_t spatial = xs.size() - 2;
    if (!formatOf(xd->type, format) || wd->type != xd->type ||
        yd->type != xd->type) {
      status = CUDNN_STATUS_BAD_PARAM;
      return;
    }
    if (cd->mode != CUDNN_CROSS_CORRELATION ||
        wd->format != CUDNN_TENSOR_NCHW) {
      status = CUDNN_STATUS_NOT_SUPPORTED;
      return;
    }
    int groups = cd->groups, channels = xs[1], features = ws[0];
    bool chains = ws.size() == xs.size() && ys.size() == xs.size() &&
                  cd->pad.size() == spatial && ys[0] == xs[0] &&
                  ys[1] == features && channels % groups == 0 &&
                  features % groups == 0 && ws[1] == channels / groups;
    for (size_t d = 0; chains && d < spatial; ++d) {
      int span = cd->dilation[d] * (ws[2 + d] - 1) + 1;
      chains =
          ys[2 + d] == (xs[2 + d] + 2 * cd->pad[d] - span) / cd->stride[d] + 1;
    }
    if (!chains)
      status = CUDNN_STATUS_BAD_PARAM;
  }

  /// fn(x offset, w offset, y offset) for every tap inside the input.
  template <typename Fn> void walk(Fn &&fn) const {
    const std::vector<int> &xs = xd->dims, &ws = wd->dims, &ys = yd->dims;
    size_t spatial = xs.size() - 2;
    int features = ws[0], cg = ws[1], kg = features / cd->groups;
    int64_t outs = 1, window = 1;
    for (size_t d = 0; d < spatial; ++d) {
      outs *= ys[2 + d];
      window *= ws[2 + d];
    }
    std::vector<int> o(spatial), r(spatial);
    for (int n = 0; n < xs[0]; ++n)
      for (int k = 0; k < features; ++k)
        for (int64_t oi = 0; oi < outs; ++oi) {
          int64_t yo =
              int64_t(n) * yd->strides[0] + int64_t(k) * yd->strides[1];
          for (size_t d = spatial, ox = oi; d-- > 0; ox /= ys[2 + d]) {
            o[d] = int(ox % ys[2 + d]);
            yo += int64_t(o[d]) * yd->strides[2 + d];
          }
          for (int64_t ri = 0; ri < window; ++ri) {
            int64_t xo = int64_t(n) * xd->strides[0] +
                         int64_t(k / kg * cg) * xd->strides[1];
            bool inside = true;
            for (size_t d = spatial, rx = ri; d-- > 0; rx /= ws[2 + d]) {
              r[d] = int(rx % ws[2 + d]);
              int at =
                  o[d] * cd->stride[d] - cd->pad[d] + r[d] * cd->dilation[d];
              inside = inside && at >= 0 && at < xs[2 + d];
              xo += int64_t(at) * xd->strides[2 + d];
            }
            if (!inside)
              continue;
            for (int c = 0; c < cg; ++c)
              fn(xo + int64_t(c) * xd->strides[1],
                 (int64_t(k) * cg + c) * window + ri, yo);
          }
        }
  }
};

/// The elements of a descriptor's tensor: offsets in index order.
std::vector<int64_t> offsets(const std::vector<int> &dims,
                             const std::vector<int> &strides) {
  std::vector<int64_t> all = {0};
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<int64_t> next;
    for (int64_t base : all)
      for (int i = 0; i < dims[d]; ++i)
        next.push_back(base + int64_t(i) * strides[d]);
    all.swap(next);
  }
  return all;
}

/// The products a[i] b[j] summed per tap into the result's element (the
/// tap's `Role`: 0 x, 1 w, 2 y), a and b the taps' other two operands in
/// role order, then blended into `dst` at `at` (every element of the
/// result's tensor).
cudnnStatus_t accumulate(const Taps &taps, int role, const void *a,
                         const void *b, const std::vector<int64_t> &at,
                         const void *alpha, const void *beta, void *dst) {
  if (taps.status != CUDNN_STATUS_SUCCESS)
    return taps.status;
  std::vector<float> sum(
      at.empty() ? 0 : *std::max_element(at.begin(), at.end()) + 1);
  int i = role == 0 ? 1 : 0, j = role == 2 ? 1 : 2; // a's role, b's
  // f32 under any math type but FMA may run on TF32 tensor cores: the
  // products' operands as they read them.
  bool tf32 = taps.format == Format::F32 && taps.cd->math != CUDNN_FMA_MATH;
  auto operand = [&](const void *p, int64_t k) {
    float v = emulator::load(taps.format, p, k);
    return tf32 ? emulator::roundToTf32(v) : v;
  };
  taps.walk([&](int64_t x, int64_t w, int64_t y) {
    int64_t offset[3] = {x, w, y};
    sum[offset[role]] += operand(a, offset[i]) * operand(b, offset[j]);
  });
  float al = *static_cast<const float *>(alpha),
        be = *static_cast<const float *>(beta);
  for (int64_t k : at)
    blendInto(taps.format, dst, k, al, sum[k], be);
  return CUDNN_STATUS_SUCCESS;
}

std::vector<int> contiguous(const std::vector<int> &dims) {
  std::vector<int> strides(dims.size(), 1);
  for (size_t k = dims.size() - 1; k-- > 0;)
    strides[k] = strides[k + 1] * dims[k + 1];
  return strides;
}

cudnnStatus_t forward(cudnnHandle_t h, const void *alpha,
                      cudnnTensorDescriptor_t xd, const void *x,
                      cudnnFilterDescriptor_t wd, const void *w,
                      cudnnConvolutionDescriptor_t cd,
                      cudnnConvolutionFwdAlgo_t, void *, size_t,
                      const void *beta, cudnnTensorDescriptor_t yd, void *y) {
  emulator::DeviceWork work(emulator::DeviceWork::Library, streamOf(h));
  return accumulate(Taps(xd, wd, cd, yd), 2, x, w,
                    offsets(yd->dims, yd->strides), alpha, beta, y);
}

cudnnStatus_t backwardData(cudnnHandle_t h, const void *alpha,
                           cudnnFilterDescriptor_t wd, const void *w,
                           cudnnTensorDescriptor_t dyd, const void *dy,
                           cudnnConvolutionDescriptor_t cd,
                           cudnnConvolutionBwdDataAlgo_t, void *, size_t,
                           const void *beta, cudnnTensorDescriptor_t dxd,
                           void *dx) {
  emulator::DeviceWork work(emulator::DeviceWork::Library, streamOf(h));
  return accumulate(Taps(dxd, wd, cd, dyd), 0, w, dy,
                    offsets(dxd->dims, dxd->strides), alpha, beta, dx);
}

cudnnStatus_t backwardFilter(cudnnHandle_t h, const void *alpha,
                             cudnnTensorDescriptor_t xd, const void *x,
                             cudnnTensorDescriptor_t dyd, const void *dy,
                             cudnnConvolutionDescriptor_t cd,
                             cudnnConvolutionBwdFilterAlgo_t, void *, size_t,
                             const void *beta, cudnnFilterDescriptor_t dwd,
                             void *dw) {
  emulator::DeviceWork work(emulator::DeviceWork::Library, streamOf(h));
  return accumulate(Taps(xd, dwd, cd, dyd), 1, x, dy,
                    offsets(dwd->dims, contiguous(dwd->dims)), alpha, beta, dw);
}

/// One deterministic algorithm, whatever the pass.
template <typename Perf>
cudnnStatus_t rank(int requested, int *count, Perf *perf) {
  emulator::countAlgorithmQuery();
  *count = 0;
  if (requested < 1)
    return CUDNN_STATUS_BAD_PARAM;
  perf[0] = Perf{};
  perf[0].status = CUDNN_STATUS_SUCCESS;
  perf[0].memory = kWorkspace;
  perf[0].determinism = CUDNN_DETERMINISTIC;
  *count = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t addTensor(cudnnHandle_t h, const void *alpha,
                        cudnnTensorDescriptor_t ad, const void *a,
                        const void *beta, cudnnTensorDescriptor_t cd, void *c) {
  emulator::DeviceWork work(emulator::DeviceWork::Library, streamOf(h));
  Format format;
  if (ad->dims.size() != cd->dims.size() || ad->type != cd->type ||
      !formatOf(cd->type, format))
    return CUDNN_STATUS_BAD_PARAM;
  // A broadcasts along its unit dims: its stride there counts for nothing.
  std::vector<int> strides = ad->strides;
  for (size_t d = 0; d < ad->dims.size(); ++d) {
    if (ad->dims[d] != cd->dims[d] && ad->dims[d] != 1)
      return CUDNN_STATUS_BAD_PARAM;
    if (ad->dims[d] == 1)
      strides[d] = 0;
  }
  std::vector<int64_t> from = offsets(cd->dims, strides),
                       to = offsets(cd->dims, cd->strides);
  float al = *static_cast<const float *>(alpha),
        be = *static_cast<const float *>(beta);
  for (size_t i = 0; i < to.size(); ++i)
    blendInto(format, c, to[i], al, emulator::load(format, a, from[i]), be);
  return CUDNN_STATUS_SUCCESS;
}

/// A spatial batch norm's f32 tensor by channel: offsets of channel c's
/// elements.
struct Channels {
  std::vector<std::vector<int64_t>> of;
  explicit Channels(cudnnTensorDescriptor_t xd) {
    std::vector<int> dims = xd->dims;
    int count = dims[1];
    dims[1] = 1;
    std::vector<int64_t> rest = offsets(dims, xd->strides);
    for (int c = 0; c < count; ++c) {
      of.emplace_back();
      for (int64_t i : rest)
        of.back().push_back(i + int64_t(c) * xd->strides[1]);
    }
  }
};

bool spatialF32(cudnnBatchNormMode_t mode, cudnnTensorDescriptor_t xd) {
  return mode == CUDNN_BATCHNORM_SPATIAL && xd->type == CUDNN_DATA_FLOAT;
}

/// Channel c's batch mean and biased variance.
std::pair<double, double> moments(const float *x,
                                  const std::vector<int64_t> &at) {
  double sum = 0, squares = 0;
  for (int64_t i : at)
    sum += x[i];
  double mean = sum / double(at.size());
  for (int64_t i : at)
    squares += (x[i] - mean) * (x[i] - mean);
  return {mean, squares / double(at.size())};
}

cudnnStatus_t bnTraining(cudnnHandle_t h, cudnnBatchNormMode_t mode,
                         const void *alpha, const void *beta,
                         cudnnTensorDescriptor_t xd, const void *xp,
                         cudnnTensorDescriptor_t, void *yp,
                         cudnnTensorDescriptor_t, const void *scale,
                         const void *bias, double factor, void *runningMean,
                         void *runningVar, double eps, void *saveMean,
                         void *saveInvVar) {
  emulator::DeviceWork work(emulator::DeviceWork::Library, streamOf(h));
  if (!spatialF32(mode, xd))
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (eps < CUDNN_BN_MIN_EPSILON)
    return CUDNN_STATUS_BAD_PARAM;
  auto *x = static_cast<const float *>(xp);
  auto *y = static_cast<float *>(yp);
  float al = *static_cast<const float *>(alpha),
        be = *static_cast<const float *>(beta);
  Channels channels(xd);
  for (size_t c = 0; c < channels.of.size(); ++c) {
    const std::vector<int64_t> &at = channels.of[c];
    auto [mean, var] = moments(x, at);
    double inv = 1 / std::sqrt(var + eps), n = double(at.size());
    float g = static_cast<const float *>(scale)[c],
          b = static_cast<const float *>(bias)[c];
    for (int64_t i : at)
      blendInto(y[i], al, float(g * (x[i] - mean) * inv + b), be);
    auto *rm = static_cast<float *>(runningMean),
         *rv = static_cast<float *>(runningVar);
    rm[c] = float(factor * mean + (1 - factor) * rm[c]);
    rv[c] = float(factor * var * n / (n - 1) + (1 - factor) * rv[c]);
    if (saveMean)
      static_cast<float *>(saveMean)[c] = float(mean);
    if (saveInvVar)
      static_cast<float *>(saveInvVar)[c] = float(inv);
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t bnInference(cudnnHandle_t h, cudnnBatchNormMode_t mode,
                          const void *alpha, const void *beta,
                          cudnnTensorDescriptor_t xd, const void *xp,
                          cudnnTensorDescriptor_t, void *yp,
                          cudnnTensorDescriptor_t, const void *scale,
                          const void *bias, const void *mean,
                          const void *variance, double eps) {
  emulator::DeviceWork work(emulator::DeviceWork::Library, streamOf(h));
  if (!spatialF32(mode, xd))
    return CUDNN_STATUS_NOT_SUPPORTED;
  auto *x = static_cast<const float *>(xp);
  auto *y = static_cast<float *>(yp);
  float al = *static_cast<const float *>(alpha),
        be = *static_cast<const float *>(beta);
  Channels channels(xd);
  for (size_t c = 0; c < channels.of.size(); ++c) {
    double m = static_cast<const float *>(mean)[c],
           inv = 1 / std::sqrt(static_cast<const float *>(variance)[c] + eps);
    float g = static_cast<const float *>(scale)[c],
          b = static_cast<const float *>(bias)[c];
    for (int64_t i : channels.of[c])
      blendInto(y[i], al, float(g * (x[i] - m) * inv + b), be);
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t bnBackward(cudnnHandle_t h, cudnnBatchNormMode_t mode,
                         const void *alphaData, const void *betaData,
                         const void *alphaParam, const void *betaParam,
                         cudnnTensorDescriptor_t xd, const void *xp,
                         cudnnTensorDescriptor_t, const void *dyp,
                         cudnnTensorDescriptor_t, void *dxp,
                         cudnnTensorDescriptor_t, const void *scale,
                         void *dScale, void *dBias, double eps,
                         const void *savedMean, const void *savedInvVar) {
  emulator::DeviceWork work(emulator::DeviceWork::Library, streamOf(h));
  if (!spatialF32(mode, xd))
    return CUDNN_STATUS_NOT_SUPPORTED;
  auto *x = static_cast<const float *>(xp);
  auto *dy = static_cast<const float *>(dyp);
  auto *dx = static_cast<float *>(dxp);
  float ad = *static_cast<const float *>(alphaData),
        bd = *static_cast<const float *>(betaData),
        ap = *static_cast<const float *>(alphaParam),
        bp = *static_cast<const float *>(betaParam);
  Channels channels(xd);
  for (size_t c = 0; c < channels.of.size(); ++c) {
    const std::vector<int64_t> &at = channels.of[c];
    auto [mean, var] = moments(x, at);
    double inv = 1 / std::sqrt(var + eps), n = double(at.size());
    if (savedMean && savedInvVar) { // the forward's, as given
      mean = static_cast<const float *>(savedMean)[c];
      inv = static_cast<const float *>(savedInvVar)[c];
    }
    double sumDy = 0, sumDyXhat = 0;
    for (int64_t i : at) {
      sumDy += dy[i];
      sumDyXhat += dy[i] * (x[i] - mean) * inv;
    }
    float g = static_cast<const float *>(scale)[c];
    for (int64_t i : at) {
      double xhat = (x[i] - mean) * inv;
      blendInto(dx[i], ad,
                float(g * inv * (dy[i] - (sumDy + xhat * sumDyXhat) / n)), bd);
    }
    auto *ds = static_cast<float *>(dScale), *db = static_cast<float *>(dBias);
    blendInto(ds[c], ap, float(sumDyXhat), bp);
    blendInto(db[c], ap, float(sumDy), bp);
  }
  return CUDNN_STATUS_SUCCESS;
}

} // namespace

const Cudnn &Cudnn::get() {
  static const Cudnn table = [] {
    Cudnn t;
    t.cudnnCreate = [](cudnnHandle_t *h) -> cudnnStatus_t {
      *h = new cudnnContext;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnDestroy = [](cudnnHandle_t h) -> cudnnStatus_t {
      delete h;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnSetStream = [](cudnnHandle_t h,
                          cudaStream_t stream) -> cudnnStatus_t {
      h->stream = stream;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnGetErrorString = [](cudnnStatus_t status) -> const char * {
      return status == CUDNN_STATUS_BAD_PARAM ? "CUDNN_STATUS_BAD_PARAM"
             : status == CUDNN_STATUS_NOT_SUPPORTED
                 ? "CUDNN_STATUS_NOT_SUPPORTED"
                 : "CUDNN_STATUS_INTERNAL_ERROR (the CUDA emulator's cuDNN)";
    };
    t.cudnnCreateTensorDescriptor =
        [](cudnnTensorDescriptor_t *d) -> cudnnStatus_t {
      *d = new cudnnTensorStruct;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnSetTensorNdDescriptor =
        [](cudnnTensorDescriptor_t d, cudnnDataType_t type, int n,
           const int dims[], const int strides[]) -> cudnnStatus_t {
      if (n < 3 || n > 8)
        return CUDNN_STATUS_BAD_PARAM;
      d->type = type;
      d->dims.assign(dims, dims + n);
      d->strides.assign(strides, strides + n);
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnDestroyTensorDescriptor =
        [](cudnnTensorDescriptor_t d) -> cudnnStatus_t {
      delete d;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnCreateFilterDescriptor =
        [](cudnnFilterDescriptor_t *d) -> cudnnStatus_t {
      *d = new cudnnFilterStruct;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnSetFilterNdDescriptor = [](cudnnFilterDescriptor_t d,
                                      cudnnDataType_t type,
                                      cudnnTensorFormat_t format, int n,
                                      const int dims[]) -> cudnnStatus_t {
      if (n < 3 || n > 8)
        return CUDNN_STATUS_BAD_PARAM;
      d->type = type;
      d->format = format;
      d->dims.assign(dims, dims + n);
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnDestroyFilterDescriptor =
        [](cudnnFilterDescriptor_t d) -> cudnnStatus_t {
      delete d;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnCreateConvolutionDescriptor =
        [](cudnnConvolutionDescriptor_t *d) -> cudnnStatus_t {
      *d = new cudnnConvolutionStruct;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnSetConvolutionNdDescriptor =
        [](cudnnConvolutionDescriptor_t d, int n, const int pad[],
           const int stride[], const int dilation[],
           cudnnConvolutionMode_t mode, cudnnDataType_t) -> cudnnStatus_t {
      for (int k = 0; k < n; ++k)
        if (pad[k] < 0 || stride[k] < 1 || dilation[k] < 1)
          return CUDNN_STATUS_BAD_PARAM;
      d->pad.assign(pad, pad + n);
      d->stride.assign(stride, stride + n);
      d->dilation.assign(dilation, dilation + n);
      d->mode = mode;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnSetConvolutionGroupCount = [](cudnnConvolutionDescriptor_t d,
                                         int groups) -> cudnnStatus_t {
      if (groups < 1)
        return CUDNN_STATUS_BAD_PARAM;
      d->groups = groups;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnSetConvolutionMathType = [](cudnnConvolutionDescriptor_t d,
                                       cudnnMathType_t math) -> cudnnStatus_t {
      d->math = math;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnDestroyConvolutionDescriptor =
        [](cudnnConvolutionDescriptor_t d) -> cudnnStatus_t {
      delete d;
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnGetConvolutionForwardAlgorithm_v7 =
        [](cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
           cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int n,
           int *count, cudnnConvolutionFwdAlgoPerf_t *perf) {
          return rank(n, count, perf);
        };
    t.cudnnGetConvolutionBackwardDataAlgorithm_v7 =
        [](cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
           cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t, int n,
           int *count, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
          return rank(n, count, perf);
        };
    t.cudnnGetConvolutionBackwardFilterAlgorithm_v7 =
        [](cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
           cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t, int n,
           int *count, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
          return rank(n, count, perf);
        };
    t.cudnnGetConvolutionForwardWorkspaceSize =
        [](cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t,
           cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
           cudnnConvolutionFwdAlgo_t, size_t *bytes) {
          *bytes = kWorkspace;
          return CUDNN_STATUS_SUCCESS;
        };
    t.cudnnGetConvolutionBackwardDataWorkspaceSize =
        [](cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t,
           cudnnConvolutionDescriptor_t, cudnnTensorDescriptor_t,
           cudnnConvolutionBwdDataAlgo_t, size_t *bytes) {
          *bytes = kWorkspace;
          return CUDNN_STATUS_SUCCESS;
        };
    t.cudnnGetConvolutionBackwardFilterWorkspaceSize =
        [](cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t,
           cudnnConvolutionDescriptor_t, cudnnFilterDescriptor_t,
           cudnnConvolutionBwdFilterAlgo_t, size_t *bytes) {
          *bytes = kWorkspace;
          return CUDNN_STATUS_SUCCESS;
        };
    t.cudnnConvolutionForward = forward;
    t.cudnnConvolutionBackwardData = backwardData;
    t.cudnnConvolutionBackwardFilter = backwardFilter;
    t.cudnnAddTensor = addTensor;
    t.cudnnDeriveBNTensorDescriptor =
        [](cudnnTensorDescriptor_t derived, cudnnTensorDescriptor_t x,
           cudnnBatchNormMode_t mode) -> cudnnStatus_t {
      if (mode != CUDNN_BATCHNORM_SPATIAL)
        return CUDNN_STATUS_NOT_SUPPORTED;
      derived->type = CUDNN_DATA_FLOAT;
      derived->dims.assign(x->dims.size(), 1);
      derived->dims[1] = x->dims[1];
      derived->strides = contiguous(derived->dims);
      return CUDNN_STATUS_SUCCESS;
    };
    t.cudnnBatchNormalizationForwardTraining = bnTraining;
    t.cudnnBatchNormalizationForwardInference = bnInference;
    t.cudnnBatchNormalizationBackward = bnBackward;
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
