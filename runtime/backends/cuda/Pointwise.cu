//===- Pointwise.cu - elementwise kernels with masks and bounds ----------===//
//
// Grid-stride loops: relu/gelu/gelu_tanh gradients of (x, dy) and clip
// with its gradient (ElementwiseMath.h), where with numpy broadcasting and
// trilu (elements copied by size, any dtype), equal, and dropout whose
// mask bits are the CPU kernel's (DropoutMask.h: Philox4x32-10 of the
// whole tensor's element index), so a plan draws the same masks on either
// backend.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Launch.cuh"
#include "Storage.cuh"

#include "../../kernels/DropoutMask.h"
#include "../../kernels/ElementwiseMath.h"

namespace weft::rt::cuda {

namespace {

template <Storage S, typename Op>
__global__ void gradKernel(const void *x, const void *dy, void *dx, int64_t n,
                           Op op) {
  WEFT_GRID_STRIDE(i, n) { store<S>(dx, i, op(load<S>(x, i), load<S>(dy, i))); }
}

/// dx = op(x, dy), all three of one shape and dtype.
template <typename Op>
void activationGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  int64_t n = x.numel();
  if (n == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(gradKernel<S>, grid(n), kThreads, ctx.stream, x.data, dy.data,
                dx.data, n, Op());
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// glu: y = act(gate) up, in f32 from S storage (ElementwiseMath.h's Glu,
/// the CPU kernel's).
template <Storage S, typename Op>
__global__ void gluKernel(const void *g, const void *u, void *y, int64_t n,
                          Op op) {
  WEFT_GRID_STRIDE(i, n) { store<S>(y, i, op(load<S>(g, i), load<S>(u, i))); }
}

void glu(const KernelCall &call, const Context &ctx) {
  int64_t n = call.in[0].numel();
  if (n == 0)
    return;
  math::withGlu(*ops::gluActivationNamed(call.s("activation")), [&](auto op) {
    byStorage(call, call.in[0].dtype, [&]<Storage S>() {
      WEFT_LAUNCH((gluKernel<S, decltype(op)>), grid(n), kThreads, ctx.stream,
                  call.in[0].data, call.in[1].data, call.out[0].data, n, op);
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// glu_grad (gate, up, dy) -> (dgate, dup).
template <Storage S, typename Op>
__global__ void gluGradKernel(const void *g, const void *u, const void *dy,
                              void *dg, void *du, int64_t n, Op op) {
  WEFT_GRID_STRIDE(i, n) {
    float gi = load<S>(g, i), ui = load<S>(u, i), dyi = load<S>(dy, i);
    store<S>(dg, i, op.gateGrad(gi, ui, dyi));
    store<S>(du, i, op.upGrad(gi, dyi));
  }
}

void gluGrad(const KernelCall &call, const Context &ctx) {
  int64_t n = call.in[0].numel();
  if (n == 0)
    return;
  math::withGlu(*ops::gluActivationNamed(call.s("activation")), [&](auto op) {
    byStorage(call, call.in[0].dtype, [&]<Storage S>() {
      WEFT_LAUNCH((gluGradKernel<S, decltype(op)>), grid(n), kThreads,
                  ctx.stream, call.in[0].data, call.in[1].data, call.in[2].data,
                  call.out[0].data, call.out[1].data, n, op);
    });
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <Storage S>
__global__ void clipKernel(const void *x, void *y, int64_t n, math::Clip op) {
  WEFT_GRID_STRIDE(i, n) { store<S>(y, i, op(load<S>(x, i))); }
}

template <Storage S>
__global__ void clipGradKernel(const void *x, const void *dy, void *dx,
                               int64_t n, math::Clip op) {
  WEFT_GRID_STRIDE(i, n) {
    store<S>(dx, i, op.grad(load<S>(x, i), load<S>(dy, i)));
  }
}

/// clip (x -> y) and clip_grad (x, dy -> dx) with the call's bounds.
template <bool Grad> void clip(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0];
  int64_t n = x.numel();
  if (n == 0)
    return;
  math::Clip op = math::Clip::of(call);
  byStorage(call, x.dtype, [&]<Storage S>() {
    if (Grad)
      WEFT_LAUNCH(clipGradKernel<S>, grid(n), kThreads, ctx.stream, x.data,
                  call.in[1].data, call.out[0].data, n, op);
    else
      WEFT_LAUNCH(clipKernel<S>, grid(n), kThreads, ctx.stream, x.data,
                  call.out[0].data, n, op);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <typename E>
__global__ void triluKernel(const E *x, E *y, int64_t n, int64_t rows,
                            int64_t cols, int64_t k, bool upper) {
  WEFT_GRID_STRIDE(e, n) {
    int64_t i = e / cols % rows, j = e % cols;
    bool keep = upper ? j - i >= k : j - i <= k;
    y[e] = keep ? x[e] : E(0);
  }
}

/// ONNX Trilu-14 over the last two dims (elements copied by size).
void trilu(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  int64_t n = x.numel();
  if (n == 0)
    return;
  int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  dispatchBySize(dtypeSize(x.dtype), [&](auto tag) {
    using E = decltype(tag);
    WEFT_LAUNCH(triluKernel<E>, grid(n), kThreads, ctx.stream, x.as<E>(),
                y.as<E>(), n, rows, cols, call.i("k"), call.b("upper"));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <Storage S>
__global__ void equalFloatKernel(const void *a, const void *b, uint8_t *y,
                                 int64_t n, Strided<2> shape) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t offset[2];
    shape.offsets(i, offset);
    y[i] = load<S>(a, offset[0]) == load<S>(b, offset[1]);
  }
}

template <typename E>
__global__ void equalBitsKernel(const E *a, const E *b, uint8_t *y, int64_t n,
                                Strided<2> shape) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t offset[2];
    shape.offsets(i, offset);
    y[i] = a[offset[0]] == b[offset[1]];
  }
}

/// ONNX Equal-13 with broadcasting: floats compare as numbers (-0 == 0,
/// NaN unequal), integers and bools by their bits.
void equal(const KernelCall &call, const Context &ctx) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  Strided<2> shape = broadcastPair(call, a, b, y);
  if (a.dtype == DType::F32 || a.dtype == DType::BF16 ||
      a.dtype == DType::F16) {
    byStorage(call, a.dtype, [&]<Storage S>() {
      WEFT_LAUNCH(equalFloatKernel<S>, grid(n), kThreads, ctx.stream, a.data,
                  b.data, y.as<uint8_t>(), n, shape);
    });
  } else if (a.dtype == DType::F64) {
    unsupported(call, a.dtype);
  } else {
    dispatchBySize(dtypeSize(a.dtype), [&](auto tag) {
      using E = decltype(tag);
      WEFT_LAUNCH(equalBitsKernel<E>, grid(n), kThreads, ctx.stream, a.as<E>(),
                  b.as<E>(), y.as<uint8_t>(), n, shape);
    });
  }
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <Storage S, typename Op>
__global__ void compareFloatKernel(const void *a, const void *b, uint8_t *y,
                                   int64_t n, Strided<2> shape, Op op) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t offset[2];
    shape.offsets(i, offset);
    y[i] = op(load<S>(a, offset[0]), load<S>(b, offset[1]));
  }
}

template <typename E, typename Op>
__global__ void compareTypedKernel(const E *a, const E *b, uint8_t *y,
                                   int64_t n, Strided<2> shape, Op op) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t offset[2];
    shape.offsets(i, offset);
    y[i] = op(a[offset[0]], b[offset[1]]);
  }
}

/// compare (Less, LessOrEqual, Greater, GreaterOrEqual) with broadcasting:
/// floats compare in f32 registers, integers as their own type.
void compare(const KernelCall &call, const Context &ctx) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  Strided<2> shape = broadcastPair(call, a, b, y);
  math::Compare op = math::Compare::of(call);
  if (a.dtype == DType::F32 || a.dtype == DType::BF16 ||
      a.dtype == DType::F16) {
    byStorage(call, a.dtype, [&]<Storage S>() {
      WEFT_LAUNCH((compareFloatKernel<S, math::Compare>), grid(n), kThreads,
                  ctx.stream, a.data, b.data, y.as<uint8_t>(), n, shape, op);
    });
  } else {
    if (!dispatchInteger(a.dtype, [&]<typename E>() {
          WEFT_LAUNCH((compareTypedKernel<E, math::Compare>), grid(n), kThreads,
                      ctx.stream, a.as<E>(), b.as<E>(), y.as<uint8_t>(), n,
                      shape, op);
        }))
      unsupported(call, a.dtype);
  }
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// logical (And, Or, Xor) of bools with broadcasting.
void logical(const KernelCall &call, const Context &ctx) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  Strided<2> shape = broadcastPair(call, a, b, y);
  WEFT_LAUNCH((compareTypedKernel<uint8_t, math::Logical>), grid(n), kThreads,
              ctx.stream, a.as<uint8_t>(), b.as<uint8_t>(), y.as<uint8_t>(), n,
              shape, math::Logical::of(call));
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// One thread per row of the axis (outer x inner rows): a prefix sum in
/// the element type, f32 registers for 16-bit storage.
template <Storage S>
__global__ void cumsumFloatKernel(const void *x, void *y, int64_t rows,
                                  AxisView v, bool exclusive, bool reverse) {
  WEFT_GRID_STRIDE(r, rows) {
    int64_t o = r / v.inner, i = r % v.inner;
    float sum = 0.0f;
    for (int64_t k = 0; k < v.dim; ++k) {
      int64_t at = (o * v.dim + (reverse ? v.dim - 1 - k : k)) * v.inner + i;
      float element = load<S>(x, at);
      if (!exclusive)
        sum += element;
      store<S>(y, at, sum);
      if (exclusive)
        sum += element;
    }
  }
}

template <typename E>
__global__ void cumsumTypedKernel(const E *x, E *y, int64_t rows, AxisView v,
                                  bool exclusive, bool reverse) {
  WEFT_GRID_STRIDE(r, rows) {
    int64_t o = r / v.inner, i = r % v.inner;
    E sum = E(0);
    for (int64_t k = 0; k < v.dim; ++k) {
      int64_t at = (o * v.dim + (reverse ? v.dim - 1 - k : k)) * v.inner + i;
      E element = x[at];
      if (!exclusive)
        sum += element;
      y[at] = sum;
      if (exclusive)
        sum += element;
    }
  }
}

/// CumSum-14 along `axis` (f64 unsupported, as elsewhere on the GPU).
void cumsum(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0];
  AxisView v(x.shape, call.i("axis"));
  int64_t rows = v.rows();
  if (x.numel() == 0)
    return;
  bool exclusive = call.b("exclusive"), reverse = call.b("reverse");
  if (x.dtype == DType::F32 || x.dtype == DType::BF16 ||
      x.dtype == DType::F16) {
    byStorage(call, x.dtype, [&]<Storage S>() {
      WEFT_LAUNCH(cumsumFloatKernel<S>, grid(rows), kThreads, ctx.stream,
                  x.data, y.data, rows, v, exclusive, reverse);
    });
  } else {
    if (!dispatchInteger(x.dtype, [&]<typename E>() {
          WEFT_LAUNCH(cumsumTypedKernel<E>, grid(rows), kThreads, ctx.stream,
                      x.as<E>(), y.as<E>(), rows, v, exclusive, reverse);
        }))
      unsupported(call, x.dtype);
  }
  WEFT_CUDA_CHECK(cudaGetLastError());
}

__global__ void notKernel(const uint8_t *x, uint8_t *y, int64_t n) {
  WEFT_GRID_STRIDE(i, n) { y[i] = x[i] == 0; }
}

void logicalNot(const KernelCall &call, const Context &ctx) {
  int64_t n = call.in[0].numel();
  if (n == 0)
    return;
  WEFT_LAUNCH(notKernel, grid(n), kThreads, ctx.stream,
              call.in[0].as<uint8_t>(), call.out[0].as<uint8_t>(), n);
  WEFT_CUDA_CHECK(cudaGetLastError());
}

struct IsNaN {
  __device__ bool operator()(float v) const { return v != v; }
};

template <Storage S, typename Test>
__global__ void classifyKernel(const void *x, uint8_t *y, int64_t n,
                               Test test) {
  WEFT_GRID_STRIDE(i, n) { y[i] = test(load<S>(x, i)); }
}

/// is_nan and is_inf: a float -> bool test per element.
template <typename Test>
void classify(const KernelCall &call, const Context &ctx, Test test) {
  const Tensor &x = call.in[0];
  int64_t n = x.numel();
  if (n == 0)
    return;
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH((classifyKernel<S, Test>), grid(n), kThreads, ctx.stream,
                x.data, call.out[0].as<uint8_t>(), n, test);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <typename E>
__global__ void whereKernel(const uint8_t *cond, const E *x, const E *z, E *y,
                            int64_t n, Strided<3> shape) {
  WEFT_GRID_STRIDE(i, n) {
    int64_t offset[3];
    shape.offsets(i, offset);
    y[i] = cond[offset[0]] ? x[offset[1]] : z[offset[2]];
  }
}

/// ONNX Where-16: y = cond ? x : z, the three broadcast to y.
void where(const KernelCall &call, const Context &ctx) {
  const Tensor &c = call.in[0], &x = call.in[1], &z = call.in[2],
               &y = call.out[0];
  int64_t n = y.numel();
  if (n == 0)
    return;
  auto shape = Strided<3>::of(call, y.shape,
                              {broadcastStrides(c.shape, y.shape),
                               broadcastStrides(x.shape, y.shape),
                               broadcastStrides(z.shape, y.shape)});
  dispatchBySize(dtypeSize(y.dtype), [&](auto tag) {
    using E = decltype(tag);
    WEFT_LAUNCH(whereKernel<E>, grid(n), kThreads, ctx.stream, c.as<uint8_t>(),
                x.as<E>(), z.as<E>(), y.as<E>(), n, shape);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

/// One Philox block per element (the CPU caches one across four): the
/// bits are a pure function of the element's whole-tensor index.
template <Storage S>
__global__ void dropoutKernel(const void *x, void *y, uint8_t *mask, int64_t n,
                              DropoutMask bits, double scale) {
  WEFT_GRID_STRIDE(e, n) {
    int64_t g = bits.global(e);
    bool keep = bits.keeps(bits.block(g), g);
    mask[e] = keep;
    store<S>(y, e, keep ? float(double(load<S>(x, e)) * scale) : 0.0f);
  }
}

void dropout(const KernelCall &call, const Context &ctx) {
  const Tensor &x = call.in[0], &y = call.out[0], &mask = call.out[1];
  int64_t n = x.numel();
  if (n == 0)
    return;
  double ratio = call.f("ratio");
  if (!call.b("training") || ratio == 0) {
    if (y.data != x.data)
      WEFT_CUDA_CHECK(cudaMemcpyAsync(y.data, x.data, x.bytes(),
                                      cudaMemcpyDeviceToDevice, ctx.stream));
    WEFT_CUDA_CHECK(cudaMemsetAsync(mask.data, 1, n, ctx.stream));
    return;
  }
  DropoutMask bits = DropoutMask::of(call, x);
  byStorage(call, x.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(dropoutKernel<S>, grid(n), kThreads, ctx.stream, x.data, y.data,
                mask.as<uint8_t>(), n, bits, 1.0 / (1.0 - ratio));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

template <Storage S>
__global__ void dropoutGradKernel(const void *dy, const uint8_t *mask, void *dx,
                                  int64_t n, double scale) {
  WEFT_GRID_STRIDE(i, n) {
    store<S>(dx, i, mask[i] ? float(double(load<S>(dy, i)) * scale) : 0.0f);
  }
}

void dropoutGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &dy = call.in[0], &dx = call.out[0];
  int64_t n = dy.numel();
  if (n == 0)
    return;
  byStorage(call, dy.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(dropoutGradKernel<S>, grid(n), kThreads, ctx.stream, dy.data,
                call.in[1].as<uint8_t>(), dx.data, n,
                1.0 / (1.0 - call.f("ratio")));
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace

void registerPointwiseKernels(KernelTable &t) {
  t[Op::ReluGrad] = activationGrad<math::ReluGrad>;
  t[Op::GeluGrad] = activationGrad<math::GeluGrad>;
  t[Op::GeluTanhGrad] = activationGrad<math::GeluTanhGrad>;
  t[Op::Glu] = glu;
  t[Op::GluGrad] = gluGrad;
  t[Op::Where] = where;
  t[Op::Dropout] = dropout;
  t[Op::DropoutGrad] = dropoutGrad;
  t[Op::Clip] = clip<false>;
  t[Op::ClipGrad] = clip<true>;
  t[Op::Trilu] = trilu;
  t[Op::Equal] = equal;
  t[Op::Compare] = compare;
  t[Op::Logical] = logical;
  t[Op::Not] = logicalNot;
  t[Op::CumSum] = cumsum;
  t[Op::IsNaN] = [](const KernelCall &call, const Context &ctx) {
    classify(call, ctx, IsNaN());
  };
  t[Op::IsInf] = [](const KernelCall &call, const Context &ctx) {
    classify(call, ctx, math::IsInf::of(call));
  };
}

} // namespace weft::rt::cuda
