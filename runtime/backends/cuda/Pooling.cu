//===- Pooling.cu - max pooling and its gradient on the GPU ---------------===//
//
// ONNX MaxPool-12 as the CPU kernel (Pooling.cpp) computes it: a window's
// maximum over its elements inside the input (padding and ceil_mode's
// overhang never win; an all-padding window gives -inf), and the gradient
// routed to the window's first maximum in row-major window order, as
// torch. The gradient is gathered, not scattered: a thread per input
// element visits the windows that cover it in output order and adds dy
// where it is their maximum: no atomics, the CPU's summation order.
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
          dilations[kMaxSpatial] = {};
  int64_t inSize = 1, outSize = 1, kernelSize = 1;

  static Pool of(const KernelCall &call, const Tensor &x, const Tensor &y) {
    Pool p;
    p.n = int(x.rank()) - 2;
    if (p.n < 1 || p.n > kMaxSpatial)
      call.fail("rank " + std::to_string(x.rank()) +
                " is not [N, C] with one to three spatial dims");
    for (int d = 0; d < p.n; ++d) {
      p.in[d] = x.shape[d + 2];
      p.out[d] = y.shape[d + 2];
      p.kernel[d] = call.ints("kernel_shape")[d];
      p.strides[d] = call.ints("strides")[d];
      p.pads[d] = call.ints("pads")[d];
      p.dilations[d] = call.ints("dilations")[d];
      p.inSize *= p.in[d];
      p.outSize *= p.out[d];
      p.kernelSize *= p.kernel[d];
    }
    return p;
  }

  /// The flat input index of output `o`'s window maximum (the first, in
  /// row-major window order), or -1 when the window is all padding.
  template <Storage S>
  __device__ int64_t argmax(const void *plane, int64_t o, float &best) const {
    int64_t coord[kMaxSpatial], inStride[kMaxSpatial];
    for (int d = n - 1; d >= 0; --d) {
      coord[d] = o % out[d];
      o /= out[d];
      inStride[d] = d == n - 1 ? 1 : inStride[d + 1] * in[d + 1];
    }
    int64_t where = -1;
    for (int64_t k = 0; k < kernelSize; ++k) {
      int64_t flat = 0, rest = k;
      bool inside = true;
      for (int d = n - 1; d >= 0; --d) {
        int64_t kd = rest % kernel[d];
        rest /= kernel[d];
        int64_t pos = coord[d] * strides[d] - pads[d] + kd * dilations[d];
        inside &= pos >= 0 && pos < in[d];
        flat += pos * inStride[d];
      }
      if (!inside)
        continue;
      float v = load<S>(plane, flat);
      if (where < 0 || v > best) {
        best = v;
        where = flat;
      }
    }
    return where;
  }
};

/// The address of element `offset` of storage S at `base`.
template <Storage S>
__device__ const char *planeOf(const void *base, int64_t offset) {
  return static_cast<const char *>(base) + offset * (S == Storage::F32 ? 4 : 2);
}

template <Storage S>
__global__ void maxPoolKernel(const void *x, void *y, int64_t planes, Pool p) {
  WEFT_GRID_STRIDE(e, planes * p.outSize) {
    int64_t plane = e / p.outSize;
    float best = -INFINITY;
    const char *src = planeOf<S>(x, plane * p.inSize);
    int64_t where = p.argmax<S>(src, e % p.outSize, best);
    store<S>(y, e, where < 0 ? -INFINITY : best);
  }
}

/// dx at input element i: dy summed over the windows (in output order)
/// whose maximum is i.
template <Storage S>
__global__ void maxPoolGradKernel(const void *x, const void *dy, void *dx,
                                  int64_t planes, Pool p) {
  WEFT_GRID_STRIDE(e, planes * p.inSize) {
    int64_t plane = e / p.inSize, i = e % p.inSize;
    const char *src = planeOf<S>(x, plane * p.inSize);
    // The box of outputs whose windows may cover i, per dim.
    int64_t coord[kMaxSpatial], lo[kMaxSpatial], hi[kMaxSpatial];
    int64_t boxSize = 1, rest = i;
    for (int d = p.n - 1; d >= 0; --d) {
      coord[d] = rest % p.in[d];
      rest /= p.in[d];
    }
    for (int d = 0; d < p.n; ++d) {
      int64_t first = coord[d] + p.pads[d] - (p.kernel[d] - 1) * p.dilations[d];
      lo[d] = first <= 0 ? 0 : (first + p.strides[d] - 1) / p.strides[d];
      hi[d] = (coord[d] + p.pads[d]) / p.strides[d];
      hi[d] = hi[d] < p.out[d] - 1 ? hi[d] : p.out[d] - 1;
      boxSize *= hi[d] >= lo[d] ? hi[d] - lo[d] + 1 : 0;
    }
    float acc = 0;
    for (int64_t b = 0; b < boxSize; ++b) {
      int64_t o = 0, left = b;
      bool covers = true;
      int64_t oc[kMaxSpatial];
      for (int d = p.n - 1; d >= 0; --d) {
        int64_t width = hi[d] - lo[d] + 1;
        oc[d] = lo[d] + left % width;
        left /= width;
      }
      for (int d = 0; d < p.n; ++d) {
        int64_t offset = coord[d] + p.pads[d] - oc[d] * p.strides[d];
        covers &= offset >= 0 && offset % p.dilations[d] == 0 &&
                  offset / p.dilations[d] < p.kernel[d];
        o = o * p.out[d] + oc[d];
      }
      float best = -INFINITY;
      if (covers && p.argmax<S>(src, o, best) == i)
        acc += load<S>(dy, plane * p.outSize + o);
    }
    store<S>(dx, e, acc);
  }
}

void maxPool(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  Pool p = Pool::of(call, x, y);
  int64_t planes = x.shape[0] * x.shape[1];
  if (planes * p.outSize == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    maxPoolKernel<S><<<grid(planes * p.outSize), kThreads, 0, ctx.stream>>>(
        x.data, y.data, planes, p);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

void maxPoolGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  Pool p = Pool::of(call, x, dy);
  int64_t planes = x.shape[0] * x.shape[1];
  if (planes * p.inSize == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    maxPoolGradKernel<S><<<grid(planes * p.inSize), kThreads, 0, ctx.stream>>>(
        x.data, dy.data, dx.data, planes, p);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerPoolingKernels(KernelTable &t) {
  t["max_pool"] = maxPool;
  t["max_pool_grad"] = maxPoolGrad;
}

} // namespace weft::rt::cuda
