//===- Movement.cu - data movement kernels on the GPU ---------------------===//
//
// transpose, expand and slice are one strided gather over the output (the
// view StridedView.h builds for the CPU kernels too), by element size;
// concat and split move whole rows, as the CPU's memcpy loops do, with
// one cudaMemcpy2DAsync per operand; pad reads inside the input or writes
// the fill value.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "CudaKernels.h"
#include "Launch.cuh"
#include "Storage.cuh"

#include "../../kernels/StridedView.h"

#include <cstring>

namespace weft::rt::cuda {

namespace {

template <typename E>
__global__ void gatherKernel(const E *in, E *out, int64_t n, Strided<1> view) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t offset[1];
    view.offsets(i, offset);
    out[i] = in[offset[0]];
  }
}

void gather(const KernelCall &call, const Context &ctx,
            const StridedView &view) {
  const Tensor &x = call.in[0], &y = call.out[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  auto v = Strided<1>::of(call, y.shape, {view.strides}, {view.base});
  dispatchBySize(dtypeSize(x.dtype), [&](auto tag) {
    using E = decltype(tag);
    WEFT_LAUNCH(gatherKernel<E>, grid(n), kThreads, ctx.stream, x.as<E>(),
                y.as<E>(), n, v);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

void transpose(const KernelCall &call, const Context &ctx) {
  gather(call, ctx,
         StridedView::transpose(call.in[0].shape, call.ints("perm")));
}

void expand(const KernelCall &call, const Context &ctx) {
  gather(call, ctx, StridedView::expand(call.in[0].shape, call.out[0].shape));
}

void slice(const KernelCall &call, const Context &ctx) {
  gather(call, ctx,
         StridedView::slice(call.in[0].shape, call.out[0].shape,
                            call.ints("starts"), call.ints("steps")));
}

/// `outer` rows of `width` bytes from `src` (rows `srcPitch` apart) to
/// `dst` (`dstPitch` apart).
void copyRows(const Context &ctx, void *dst, int64_t dstPitch, const void *src,
              int64_t srcPitch, int64_t width, int64_t outer) {
  if (width == 0 || outer == 0)
    return;
  WEFT_CUDA_CHECK(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, outer,
                                    cudaMemcpyDeviceToDevice, ctx.stream));
}

void concat(const KernelCall &call, const Context &ctx) {
  const Tensor &y = call.out[0];
  int64_t outer = outerCount(y.shape, call.i("axis"));
  int64_t outRow = outer ? y.bytes() / outer : 0, offset = 0;
  for (const Tensor &x : call.in) {
    int64_t row = outer ? x.bytes() / outer : 0;
    copyRows(ctx, y.as<char>() + offset, outRow, x.data, row, row, outer);
    offset += row;
  }
}

void split(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0];
  int64_t outer = outerCount(x.shape, call.i("axis"));
  int64_t inRow = outer ? x.bytes() / outer : 0, offset = 0;
  for (const Tensor &y : call.out) {
    int64_t row = outer ? y.bytes() / outer : 0;
    copyRows(ctx, y.data, row, x.as<char>() + offset, inRow, row, outer);
    offset += row;
  }
}

/// The output's dims, the input's dims and strides, the begin pads: an
/// output element reads the input at its coordinates less the pads, or the
/// fill outside it.
struct Padding {
  int rank = 0;
  int64_t out[kMaxRank] = {}, in[kMaxRank] = {}, strides[kMaxRank] = {},
          begin[kMaxRank] = {};
};

template <typename E>
__global__ void padKernel(const E *x, E *y, int64_t n, Padding p, E fill) {
  WEFT_GRID_STRIDE(o, n) {
    int64_t rest = o, offset = 0;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      int64_t i = rest % p.out[d] - p.begin[d];
      rest /= p.out[d];
      inside &= i >= 0 && i < p.in[d];
      offset += i * p.strides[d];
    }
    y[o] = inside ? x[offset] : fill;
  }
}

/// ONNX Pad-13, constant mode (pads [begin..., end...]; negative crops).
void pad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  if (x.rank() > kMaxRank)
    call.fail("rank " + std::to_string(x.rank()) +
              " is over the CUDA backend's " + std::to_string(kMaxRank));
  Padding p;
  p.rank = int(x.rank());
  std::vector<int64_t> strides = stridesOf(x.shape);
  for (int d = 0; d < p.rank; ++d) {
    p.out[d] = y.shape[d];
    p.in[d] = x.shape[d];
    p.strides[d] = strides[d];
    p.begin[d] = call.ints("pads")[d];
  }
  // The fill value in the tensor's format (16-bit: rounded to nearest).
  uint64_t fill = 0;
  storeScalar(reinterpret_cast<char *>(&fill), x.dtype, call.f("value"));
  dispatchBySize(dtypeSize(x.dtype), [&](auto tag) {
    using E = decltype(tag);
    E bits;
    std::memcpy(&bits, &fill, sizeof bits);
    WEFT_LAUNCH(padKernel<E>, grid(n), kThreads, ctx.stream, x.as<E>(),
                y.as<E>(), n, p, bits);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// Nearest resize's per-dim tables on the device: source[d][x], the input
/// index output coordinate x reads, and (for the gradient) first[d][i] and
/// last[d][i], the outputs reading input i (a contiguous run: the source
/// is non-decreasing in x).
struct ResizeTables {
  int rank = 0;
  int64_t in[kMaxRank] = {}, out[kMaxRank] = {};
  const int64_t *source[kMaxRank] = {}, *first[kMaxRank] = {},
                *last[kMaxRank] = {};
};

/// Builds the tables for `x` -> `y` of a resize or resize_grad call in the
/// scratch buffer.
ResizeTables resizeTables(const KernelCall &call, const Context &ctx,
                          const Tensor &x, const Tensor &y) {
  if (x.rank() > kMaxRank)
    call.fail("rank " + std::to_string(x.rank()) +
              " is over the CUDA backend's " + std::to_string(kMaxRank));
  const std::vector<double> &scales = call.floats("scales");
  const std::string &transform = call.s("coordinate_transformation_mode"),
                    &mode = call.s("nearest_mode");
  std::vector<int64_t> host;
  std::vector<size_t> at;
  for (int64_t d = 0; d < x.rank(); ++d) {
    at.push_back(host.size());
    std::vector<int64_t> first(x.shape[d], 0), last(x.shape[d], -1);
    for (int64_t o = 0; o < y.shape[d]; ++o) {
      int64_t i =
          nearestSource(o, x.shape[d], y.shape[d], scales[d], transform, mode);
      host.push_back(i);
      if (last[i] < 0)
        first[i] = o;
      last[i] = o;
    }
    host.insert(host.end(), first.begin(), first.end());
    host.insert(host.end(), last.begin(), last.end());
  }
  const int64_t *device = ctx.scratch->upload(host, ctx.stream);
  ResizeTables t;
  t.rank = int(x.rank());
  for (int d = 0; d < t.rank; ++d) {
    t.in[d] = x.shape[d];
    t.out[d] = y.shape[d];
    t.source[d] = device + at[d];
    t.first[d] = t.source[d] + y.shape[d];
    t.last[d] = t.first[d] + x.shape[d];
  }
  return t;
}

template <typename E>
__global__ void resizeKernel(const E *x, E *y, int64_t n, ResizeTables t) {
  WEFT_GRID_STRIDE(o, n) {
    int64_t rest = o, in = 0, stride = 1;
    for (int d = t.rank - 1; d >= 0; --d) {
      in += t.source[d][rest % t.out[d]] * stride;
      rest /= t.out[d];
      stride *= t.in[d];
    }
    y[o] = x[in];
  }
}

/// dx[i]: the sum of dy over the outputs that read i, in output order.
template <Storage S>
__global__ void resizeGradKernel(const void *dy, void *dx, int64_t n,
                                 ResizeTables t) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t lo[kMaxRank], hi[kMaxRank], box = 1, rest = i;
    for (int d = t.rank - 1; d >= 0; --d) {
      int64_t c = rest % t.in[d];
      rest /= t.in[d];
      lo[d] = t.first[d][c];
      hi[d] = t.last[d][c];
      box *= hi[d] >= lo[d] ? hi[d] - lo[d] + 1 : 0;
    }
    float acc = 0;
    for (int64_t b = 0; b < box; ++b) {
      int64_t left = b, o = 0, stride = 1;
      for (int d = t.rank - 1; d >= 0; --d) {
        int64_t width = hi[d] - lo[d] + 1;
        o += (lo[d] + left % width) * stride;
        left /= width;
        stride *= t.out[d];
      }
      acc += load<S>(dy, o);
    }
    store<S>(dx, i, acc);
  }
}

/// ONNX Resize-13, mode nearest (the plans' only mode): a gather by the
/// per-dim source tables, elements copied by size.
void resize(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  ResizeTables t = resizeTables(call, ctx, x, y);
  dispatchBySize(dtypeSize(x.dtype), [&](auto tag) {
    using E = decltype(tag);
    WEFT_LAUNCH(resizeKernel<E>, grid(n), kThreads, ctx.stream, x.as<E>(),
                y.as<E>(), n, t);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

void resizeGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  int64_t n = dx.numel();
  if (n == 0)
    return;
  ResizeTables t = resizeTables(call, ctx, x, dy);
  byStorage(call, dx.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(resizeGradKernel<S>, grid(n), kThreads, ctx.stream, dy.data,
                dx.data, n, t);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerMovementKernels(KernelTable &t) {
  t[Op::Transpose] = transpose;
  t[Op::Expand] = expand;
  t[Op::Slice] = slice;
  t[Op::Concat] = concat;
  t[Op::Split] = split;
  t[Op::Pad] = pad;
  t[Op::Resize] = resize;
  t[Op::ResizeGrad] = resizeGrad;
}

} // namespace weft::rt::cuda
