//===- Pooling.cu - max and average pooling and their gradients -----------===//
//
// ONNX MaxPool-12 and AveragePool-11 as the CPU kernels (Pooling.cpp)
// compute them: a window's maximum over its elements inside the input
// (padding and ceil_mode's overhang never win; an all-padding window gives
// -inf), its mean over the elements inside (or over the padded window,
// count_include_pad, never ceil_mode's overhang); max's gradient goes to the
// window's first maximum in row-major window order, as torch, average's is
// spread over the window. Gradients are gathered, not scattered: a thread
// per input element visits the windows that cover it in output order: no
// atomics, the CPU's summation order.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Launch.cuh"
#include "Storage.cuh"

namespace weft::rt::cuda {

namespace {

constexpr int kMaxSpatial = 3;

/// One plane's window geometry (spatial dims only).
struct Pool {
  int n = 0;
  int64_t in[kMaxSpatial] = {}, out[kMaxSpatial] = {}, kernel[kMaxSpatial] = {},
          strides[kMaxSpatial] = {}, pads[kMaxSpatial] = {},
          padsEnd[kMaxSpatial] = {}, dilations[kMaxSpatial] = {};
  int64_t inSize = 1, outSize = 1, kernelSize = 1;
  bool includePad = false;

  /// `x` the input, `y` the output (or its gradient); average pooling has
  /// no dilations.
  static Pool of(const KernelCall &call, const Tensor &x, const Tensor &y,
                 bool max) {
    Pool p;
    p.n = int(x.rank()) - 2;
    if (p.n < 1 || p.n > kMaxSpatial)
      call.fail("rank " + std::to_string(x.rank()) +
                " is not [N, C] with one to three spatial dims");
    p.includePad = !max && call.b("count_include_pad");
    for (int d = 0; d < p.n; ++d) {
      p.in[d] = x.shape[d + 2];
      p.out[d] = y.shape[d + 2];
      p.kernel[d] = call.ints("kernel_shape")[d];
      p.strides[d] = call.ints("strides")[d];
      p.pads[d] = call.ints("pads")[d];
      p.padsEnd[d] = call.ints("pads")[d + p.n];
      p.dilations[d] = max ? call.ints("dilations")[d] : 1;
      p.inSize *= p.in[d];
      p.outSize *= p.out[d];
      p.kernelSize *= p.kernel[d];
    }
    return p;
  }

  /// fn(flat input index or -1 in padding, in the padded region) for each
  /// element of output `o`'s window, in row-major window order.
  template <typename Fn> __device__ void window(int64_t o, Fn fn) const {
    int64_t coord[kMaxSpatial], inStride[kMaxSpatial];
    for (int d = n - 1; d >= 0; --d) {
      coord[d] = o % out[d];
      o /= out[d];
      inStride[d] = d == n - 1 ? 1 : inStride[d + 1] * in[d + 1];
    }
    for (int64_t k = 0; k < kernelSize; ++k) {
      int64_t flat = 0, rest = k;
      bool inside = true, padded = true;
      for (int d = n - 1; d >= 0; --d) {
        int64_t kd = rest % kernel[d];
        rest /= kernel[d];
        int64_t pos = coord[d] * strides[d] - pads[d] + kd * dilations[d];
        inside &= pos >= 0 && pos < in[d];
        padded &= pos >= -pads[d] && pos < in[d] + padsEnd[d];
        flat += pos * inStride[d];
      }
      fn(inside ? flat : -1, padded);
    }
  }

  /// fn(o) for each output whose window holds input element `i`, in
  /// increasing o.
  template <typename Fn> __device__ void covering(int64_t i, Fn fn) const {
    int64_t coord[kMaxSpatial], lo[kMaxSpatial], hi[kMaxSpatial];
    int64_t box = 1;
    for (int d = n - 1; d >= 0; --d) {
      coord[d] = i % in[d];
      i /= in[d];
    }
    for (int d = 0; d < n; ++d) {
      int64_t first = coord[d] + pads[d] - (kernel[d] - 1) * dilations[d];
      lo[d] = first <= 0 ? 0 : (first + strides[d] - 1) / strides[d];
      hi[d] = (coord[d] + pads[d]) / strides[d];
      hi[d] = hi[d] < out[d] - 1 ? hi[d] : out[d] - 1;
      box *= hi[d] >= lo[d] ? hi[d] - lo[d] + 1 : 0;
    }
    for (int64_t b = 0; b < box; ++b) {
      int64_t oc[kMaxSpatial], left = b, o = 0;
      bool covers = true;
      for (int d = n - 1; d >= 0; --d) {
        int64_t width = hi[d] - lo[d] + 1;
        oc[d] = lo[d] + left % width;
        left /= width;
      }
      for (int d = 0; d < n; ++d) {
        int64_t offset = coord[d] + pads[d] - oc[d] * strides[d];
        covers &= offset >= 0 && offset % dilations[d] == 0 &&
                  offset / dilations[d] < kernel[d];
        o = o * out[d] + oc[d];
      }
      if (covers)
        fn(o);
    }
  }

  /// The flat input index of output `o`'s window maximum (the first), or
  /// -1 when the window is all padding; its value in `best`.
  template <Storage S>
  __device__ int64_t argmax(const void *plane, int64_t o, float &best) const {
    int64_t where = -1;
    window(o, [&](int64_t flat, bool) {
      if (flat < 0)
        return;
      float v = load<S>(plane, flat);
      if (where < 0 || v > best) {
        best = v;
        where = flat;
      }
    });
    return where;
  }
  /// Output `o`'s window sum (double, as the CPU's) and element count.
  template <Storage S>
  __device__ double sum(const void *plane, int64_t o, int64_t &count) const {
    double acc = 0;
    count = 0;
    window(o, [&](int64_t flat, bool padded) {
      if (flat >= 0)
        acc += load<S>(plane, flat);
      if (flat >= 0 || (includePad && padded))
        ++count;
    });
    return acc;
  }
};

/// The address of element `offset` of storage S at `base`.
template <Storage S>
__device__ const char *planeOf(const void *base, int64_t offset) {
  return static_cast<const char *>(base) + offset * (S == Storage::F32 ? 4 : 2);
}

template <Storage S, bool Max>
__global__ void poolKernel(const void *x, void *y, int64_t planes, Pool p) {
  WEFT_GRID_STRIDE(e, planes * p.outSize) {
    const char *src = planeOf<S>(x, e / p.outSize * p.inSize);
    if constexpr (Max) {
      float best = -INFINITY;
      int64_t where = p.argmax<S>(src, e % p.outSize, best);
      store<S>(y, e, where < 0 ? -INFINITY : best);
    } else {
      int64_t count;
      double acc = p.sum<S>(src, e % p.outSize, count);
      store<S>(y, e, count ? float(acc / double(count)) : 0.0f);
    }
  }
}

/// dx at input element i: max: dy summed over the windows (in output
/// order) whose maximum is i; average: dy / count of every window holding
/// it.
template <Storage S, bool Max>
__global__ void poolGradKernel(const void *x, const void *dy, void *dx,
                               int64_t planes, Pool p) {
  WEFT_GRID_STRIDE(e, planes * p.inSize) {
    int64_t plane = e / p.inSize, i = e % p.inSize;
    const char *src = planeOf<S>(x, plane * p.inSize);
    float acc = 0;
    p.covering(i, [&](int64_t o) {
      double g = load<S>(dy, plane * p.outSize + o);
      if constexpr (Max) {
        float best = -INFINITY;
        if (p.argmax<S>(src, o, best) == i)
          acc += float(g);
      } else {
        int64_t count;
        p.sum<S>(src, o, count);
        if (count)
          acc += float(g / double(count));
      }
    });
    store<S>(dx, e, acc);
  }
}

template <bool Max> void pool(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  Pool p = Pool::of(call, x, y, Max);
  int64_t planes = x.shape[0] * x.shape[1];
  if (planes * p.outSize == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH((poolKernel<S, Max>), grid(planes * p.outSize), kThreads,
                ctx.stream, x.data, y.data, planes, p);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <bool Max> void poolGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  Pool p = Pool::of(call, x, dy, Max);
  int64_t planes = x.shape[0] * x.shape[1];
  if (planes * p.inSize == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH((poolGradKernel<S, Max>), grid(planes * p.inSize), kThreads,
                ctx.stream, x.data, dy.data, dx.data, planes, p);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerPoolingKernels(KernelTable &t) {
  t[Op::MaxPool] = pool<true>;
  t[Op::AvgPool] = pool<false>;
  t[Op::MaxPoolGrad] = poolGrad<true>;
  t[Op::AvgPoolGrad] = poolGrad<false>;
}

} // namespace weft::rt::cuda
