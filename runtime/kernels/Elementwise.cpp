//===- Elementwise.cpp - unary, binary (broadcasting), where, clip, cast --===//

#include "CpuVector.h"
#include "ElementwiseMath.h"
#include "Half.h"
#include "Kernel.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace weft::rt {

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &outShape) {
  std::vector<int64_t> own = stridesOf(shape), out(outShape.size(), 0);
  size_t offset = outShape.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    out[i + offset] = shape[i] == 1 ? 0 : own[i];
  return out;
}

std::vector<int64_t> broadcastIndex(const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &outShape) {
  std::vector<int64_t> strides = broadcastStrides(shape, outShape), index;
  std::array<std::vector<int64_t>, 1> operand = {strides};
  forEachBroadcast<1>(outShape, operand, [&](int64_t, const auto &offset) {
    index.push_back(offset[0]);
  });
  return index;
}

namespace {

/// `op` is generic: float tensors compute in float (expf, erff, ...), in
/// vector loops (CpuVector.h).
template <typename Op> void unary(const KernelCall &call, Op op) {
  const Tensor &x = call.in[0], &y = call.out[0];
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    vec::map(x.as<T>(), y.as<T>(), x.numel(), op);
  });
}

template <typename Op> void binary(const KernelCall &call, Op op) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  std::array<std::vector<int64_t>, 2> strides = {
      broadcastStrides(a.shape, y.shape), broadcastStrides(b.shape, y.shape)};
  dispatchNumeric(call, a.dtype, [&]<typename T>() {
    const T *pa = a.as<T>(), *pb = b.as<T>();
    T *out = y.as<T>();
    // Rows with unit or zero strides get their own loops (vectorisable).
    forEachRow<2>(
        y.shape, strides,
        [&](int64_t o, const auto &base, int64_t n, const auto &step) {
          const T *ra = pa + base[0], *rb = pb + base[1];
          T *ro = out + o;
          if (step[0] == 1 && step[1] == 1)
            for (int64_t j = 0; j < n; ++j)
              ro[j] = static_cast<T>(op(ra[j], rb[j]));
          else if (step[0] == 1 && step[1] == 0)
            for (int64_t j = 0; j < n; ++j)
              ro[j] = static_cast<T>(op(ra[j], rb[0]));
          else if (step[0] == 0 && step[1] == 1)
            for (int64_t j = 0; j < n; ++j)
              ro[j] = static_cast<T>(op(ra[0], rb[j]));
          else
            for (int64_t j = 0; j < n; ++j)
              ro[j] = static_cast<T>(op(ra[j * step[0]], rb[j * step[1]]));
        });
  });
}

/// glu: act(gate) up over same-shape gate and up (ElementwiseMath.h's Glu).
void glu(const KernelCall &call) {
  const Tensor &g = call.in[0], &u = call.in[1], &y = call.out[0];
  math::withGlu(*ops::gluActivationNamed(call.s("activation")), [&](auto op) {
    dispatchFloat(call, g.dtype, [&]<typename T>() {
      vec::map(g.as<T>(), u.as<T>(), y.as<T>(), g.numel(), op);
    });
  });
}

void pow(const KernelCall &call) {
  // ONNX Pow allows a different exponent type; weft computes in double.
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  std::array<std::vector<int64_t>, 2> strides = {
      broadcastStrides(a.shape, y.shape), broadcastStrides(b.shape, y.shape)};
  dispatchNumeric(call, a.dtype, [&]<typename T>() {
    dispatchNumeric(call, b.dtype, [&]<typename E>() {
      const T *pa = a.as<T>();
      const E *pb = b.as<E>();
      T *out = y.as<T>();
      // A scalar exponent (a squared error, and its gradient's x^1): one
      // contiguous loop; x^2 as v * v in double, pow's value exactly where
      // x^2 fits double's 53 bits (every f32 x), correctly rounded
      // elsewhere; x^1 as x.
      if (b.numel() == 1 && a.numel() == y.numel()) {
        double e = static_cast<double>(pb[0]);
        for (int64_t i = 0, n = y.numel(); i < n; ++i) {
          double v = static_cast<double>(pa[i]);
          out[i] = static_cast<T>(e == 2.0   ? v * v
                                  : e == 1.0 ? v
                                             : math::Pow()(v, e));
        }
        return;
      }
      forEachBroadcast<2>(y.shape, strides, [&](int64_t o, const auto &off) {
        out[o] = static_cast<T>(math::Pow()(static_cast<double>(pa[off[0]]),
                                            static_cast<double>(pb[off[1]])));
      });
    });
  });
}

void equal(const KernelCall &call) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  std::array<std::vector<int64_t>, 2> strides = {
      broadcastStrides(a.shape, y.shape), broadcastStrides(b.shape, y.shape)};
  auto compare = [&]<typename T>() {
    const T *pa = a.as<T>(), *pb = b.as<T>();
    uint8_t *out = y.as<uint8_t>();
    forEachBroadcast<2>(y.shape, strides, [&](int64_t o, const auto &off) {
      out[o] = pa[off[0]] == pb[off[1]];
    });
  };
  if (a.dtype == DType::Bool)
    compare.template operator()<uint8_t>();
  else
    dispatchNumeric(call, a.dtype, compare);
}

void compare(const KernelCall &call) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  math::Compare op = math::Compare::of(call);
  std::array<std::vector<int64_t>, 2> strides = {
      broadcastStrides(a.shape, y.shape), broadcastStrides(b.shape, y.shape)};
  dispatchNumeric(call, a.dtype, [&]<typename T>() {
    const T *pa = a.as<T>(), *pb = b.as<T>();
    uint8_t *out = y.as<uint8_t>();
    forEachBroadcast<2>(y.shape, strides, [&](int64_t o, const auto &off) {
      out[o] = op(pa[off[0]], pb[off[1]]);
    });
  });
}

void logical(const KernelCall &call) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  math::Logical op = math::Logical::of(call);
  std::array<std::vector<int64_t>, 2> strides = {
      broadcastStrides(a.shape, y.shape), broadcastStrides(b.shape, y.shape)};
  const uint8_t *pa = a.as<uint8_t>(), *pb = b.as<uint8_t>();
  uint8_t *out = y.as<uint8_t>();
  forEachBroadcast<2>(y.shape, strides, [&](int64_t o, const auto &off) {
    out[o] = op(pa[off[0]], pb[off[1]]);
  });
}

/// CumSum-14 along `axis`: each row of the axis summed in order (or
/// backwards with `reverse`), each element before (`exclusive`) or after
/// adding itself.
void cumsum(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  AxisView v(x.shape, call.i("axis"));
  bool exclusive = call.b("exclusive"), reverse = call.b("reverse");
  dispatchNumeric(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>();
    T *out = y.as<T>();
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        T sum = T(0);
        for (int64_t k = 0; k < v.dim; ++k) {
          int64_t j = reverse ? v.dim - 1 - k : k;
          int64_t at = (o * v.dim + j) * v.inner + i;
          T element = in[at];
          if (!exclusive)
            sum += element;
          out[at] = sum;
          if (exclusive)
            sum += element;
        }
      }
  });
}

void logicalNot(const KernelCall &call) {
  const uint8_t *in = call.in[0].as<uint8_t>();
  uint8_t *out = call.out[0].as<uint8_t>();
  for (int64_t i = 0, n = call.in[0].numel(); i < n; ++i)
    out[i] = in[i] == 0;
}

/// A float -> bool test per element (is_nan, is_inf).
template <typename Test> void classify(const KernelCall &call, Test test) {
  const Tensor &x = call.in[0];
  uint8_t *out = call.out[0].as<uint8_t>();
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      out[i] = test(in[i]);
  });
}

void where(const KernelCall &call) {
  const Tensor &c = call.in[0], &x = call.in[1], &z = call.in[2],
               &y = call.out[0];
  std::array<std::vector<int64_t>, 3> strides = {
      broadcastStrides(c.shape, y.shape), broadcastStrides(x.shape, y.shape),
      broadcastStrides(z.shape, y.shape)};
  // Copies elements by size: works for every dtype.
  auto select = [&](auto tag) {
    using E = decltype(tag);
    const uint8_t *pc = c.as<uint8_t>();
    const E *px = x.as<E>(), *pz = z.as<E>();
    E *out = y.as<E>();
    forEachRow<3>(
        y.shape, strides,
        [&](int64_t o, const auto &base, int64_t n, const auto &step) {
          for (int64_t j = 0; j < n; ++j)
            out[o + j] = pc[base[0] + j * step[0]] ? px[base[1] + j * step[1]]
                                                   : pz[base[2] + j * step[2]];
        });
  };
  dispatchBySize(dtypeSize(y.dtype), select);
}

void clip(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  math::Clip op = math::Clip::of(call);
  dispatchNumeric(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>();
    T *out = y.as<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      out[i] = op(in[i]);
  });
}

/// double -> f16 in one rounding, through the compiler's _Float16 (a
/// double narrowed to f32 first could round twice).
uint16_t f16FromDouble(double v) {
  _Float16 h = static_cast<_Float16>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

void cast(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  int64_t count = x.numel();
  if (x.dtype == y.dtype) { // exact, including int64 beyond 2^53
    std::memcpy(y.data, x.data, x.bytes());
    return;
  }
  // Read every element as double: exact for all but int64 above 2^53.
  std::vector<double> values(count);
  switch (x.dtype) {
  case DType::Bool:
    for (int64_t i = 0; i < count; ++i)
      values[i] = x.as<uint8_t>()[i] != 0;
    break;
  case DType::F16:
    for (int64_t i = 0; i < count; ++i)
      values[i] = fromF16(x.as<uint16_t>()[i]);
    break;
  case DType::BF16:
    for (int64_t i = 0; i < count; ++i)
      values[i] = fromBF16(x.as<uint16_t>()[i]);
    break;
  default:
    dispatchNumeric(call, x.dtype, [&]<typename S>() {
      for (int64_t i = 0; i < count; ++i)
        values[i] = static_cast<double>(x.as<S>()[i]);
    });
  }
  switch (y.dtype) {
  case DType::Bool:
    for (int64_t i = 0; i < count; ++i)
      y.as<uint8_t>()[i] = values[i] != 0.0;
    return;
  case DType::F16:
    for (int64_t i = 0; i < count; ++i)
      y.as<uint16_t>()[i] = f16FromDouble(values[i]);
    return;
  case DType::BF16:
    // Cast-13 truncates; weft-mixed-precision's casts (nearest_even) round
    // as torch's .to(torch.bfloat16).
    for (int64_t i = 0; i < count; ++i)
      y.as<uint16_t>()[i] = call.flag("nearest_even")
                                ? toBF16(static_cast<float>(values[i]))
                                : truncBF16(static_cast<float>(values[i]));
    return;
  default:
    dispatchNumeric(call, y.dtype, [&]<typename T>() {
      for (int64_t i = 0; i < count; ++i)
        y.as<T>()[i] = static_cast<T>(values[i]);
    });
  }
}

} // namespace

void registerElementwiseKernels(KernelTable &t) {
  // The functions of ElementwiseMath.h, shared with the CUDA kernels; float
  // tensors compute in float (sqrtf, expf, erff...).
  t[Op::Sqrt] = [](const KernelCall &c) { unary(c, math::Sqrt()); };
  t[Op::Reciprocal] = [](const KernelCall &c) { unary(c, math::Reciprocal()); };
  t[Op::Neg] = [](const KernelCall &c) { unary(c, math::Neg()); };
  t[Op::Exp] = [](const KernelCall &c) { unary(c, math::Exp()); };
  t[Op::Log] = [](const KernelCall &c) { unary(c, math::Log()); };
  t[Op::Gelu] = [](const KernelCall &c) { unary(c, math::Gelu()); };
  t[Op::GeluTanh] = [](const KernelCall &c) { unary(c, math::GeluTanh()); };
  t[Op::Erf] = [](const KernelCall &c) { unary(c, math::Erf()); };
  t[Op::Tanh] = [](const KernelCall &c) { unary(c, math::Tanh()); };
  t[Op::Relu] = [](const KernelCall &c) { unary(c, math::Relu()); };
  t[Op::Sigmoid] = [](const KernelCall &c) { unary(c, math::Sigmoid()); };
  t[Op::Glu] = glu;
  t[Op::Add] = [](const KernelCall &c) { binary(c, math::Add()); };
  t[Op::Sub] = [](const KernelCall &c) { binary(c, math::Sub()); };
  t[Op::Mul] = [](const KernelCall &c) { binary(c, math::Mul()); };
  t[Op::Max] = [](const KernelCall &c) { binary(c, math::Max()); };
  t[Op::Min] = [](const KernelCall &c) { binary(c, math::Min()); };
  t[Op::Div] = [](const KernelCall &c) {
    binary(c, [](auto a, auto b) {
      // Integer division by zero is undefined in ONNX; weft yields 0, never a
      // trap.
      if constexpr (std::is_integral_v<decltype(b)>)
        return b == 0 ? decltype(a / b)(0) : a / b;
      else
        return a / b;
    });
  };
  t[Op::Pow] = pow;
  t[Op::Equal] = equal;
  t[Op::Compare] = compare;
  t[Op::Logical] = logical;
  t[Op::Not] = logicalNot;
  t[Op::CumSum] = cumsum;
  t[Op::IsNaN] = [](const KernelCall &c) {
    classify(c, [](auto v) { return v != v; });
  };
  t[Op::IsInf] = [](const KernelCall &c) { classify(c, math::IsInf::of(c)); };
  t[Op::Sin] = [](const KernelCall &c) { unary(c, math::Sin()); };
  t[Op::Cos] = [](const KernelCall &c) { unary(c, math::Cos()); };
  t[Op::Where] = where;
  t[Op::Clip] = clip;
  t[Op::Cast] = cast;
}

} // namespace weft::rt
