//===- Movement.cu - transpose, expand, slice, concat, split, pad on the GPU
//-===//
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

#include "../../kernels/Half.h"
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
    gatherKernel<E>
        <<<grid(n), kThreads, 0, ctx.stream>>>(x.as<E>(), y.as<E>(), n, v);
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
  double value = call.f("value");
  if (x.dtype == DType::BF16 || x.dtype == DType::F16) {
    uint16_t bits =
        x.dtype == DType::BF16 ? toBF16(float(value)) : toF16(float(value));
    std::memcpy(&fill, &bits, 2);
  } else {
    storeScalar(reinterpret_cast<char *>(&fill), x.dtype, value);
  }
  dispatchBySize(dtypeSize(x.dtype), [&](auto tag) {
    using E = decltype(tag);
    E bits;
    std::memcpy(&bits, &fill, sizeof bits);
    padKernel<E><<<grid(n), kThreads, 0, ctx.stream>>>(x.as<E>(), y.as<E>(), n,
                                                       p, bits);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerMovementKernels(KernelTable &t) {
  t["transpose"] = transpose;
  t["expand"] = expand;
  t["slice"] = slice;
  t["concat"] = concat;
  t["split"] = split;
  t["pad"] = pad;
}

} // namespace weft::rt::cuda
