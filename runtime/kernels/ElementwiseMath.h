//===- ElementwiseMath.h - elementwise functions, host/device --*- C++ -*-===//
//
// The elementwise math of the unary and binary kernels, as function objects
// generic in the element type, written once for the CPU kernels
// (Elementwise.cpp, float and double) and the CUDA ones (f32 registers for
// f32, bf16 and f16 storage), so the CPU tests exercise what the GPU runs.
// Formulas: the ONNX opset-17 operators (Relu-14, Sigmoid-13, Erf-13, ...);
// GELU is Hendrycks & Gimpel 2016 (ONNX Gelu-20, approximate "none" and
// "tanh").
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_ELEMENTWISEMATH_H
#define WEFT_RUNTIME_KERNELS_ELEMENTWISEMATH_H

#include "Half.h"

#include "weft/ops/Glu.h"

#include <cmath>

namespace weft::rt::math {

struct Sqrt {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::sqrt;
    return sqrt(v);
  }
};
struct Reciprocal {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    return T(1) / v;
  }
};
struct Neg {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const { return -v; }
};
struct Exp {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::exp;
    return exp(v);
  }
};
struct Log {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::log;
    return log(v);
  }
};
struct Erf {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::erf;
    return erf(v);
  }
};
struct Tanh {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::tanh;
    return tanh(v);
  }
};
struct Sin {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::sin;
    return sin(v);
  }
};
struct Cos {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::cos;
    return cos(v);
  }
};
/// ONNX Less-13, LessOrEqual-16, Greater-13, GreaterOrEqual-16 by the
/// compare op's `predicate`; comparisons with NaN are false.
enum class Predicate { Less, LessEqual, Greater, GreaterEqual };
struct Compare {
  Predicate predicate;
  /// The predicate of a compare call (the specification admits these four).
  template <typename Call> static Compare of(const Call &call) {
    const auto &p = call.s("predicate");
    return {p == "less"         ? Predicate::Less
            : p == "less_equal" ? Predicate::LessEqual
            : p == "greater"    ? Predicate::Greater
                                : Predicate::GreaterEqual};
  }
  template <typename T> WEFT_HOST_DEVICE bool operator()(T a, T b) const {
    switch (predicate) {
    case Predicate::Less:
      return a < b;
    case Predicate::LessEqual:
      return a <= b;
    case Predicate::Greater:
      return a > b;
    default:
      return a >= b;
    }
  }
};
/// ONNX And-7, Or-7, Xor-7 by the logical op's `kind`, on 0/1 bytes.
enum class Logic { And, Or, Xor };
struct Logical {
  Logic kind;
  template <typename Call> static Logical of(const Call &call) {
    const auto &k = call.s("kind");
    return {k == "and" ? Logic::And : k == "or" ? Logic::Or : Logic::Xor};
  }
  WEFT_HOST_DEVICE uint8_t operator()(uint8_t a, uint8_t b) const {
    bool x = a != 0, y = b != 0;
    return kind == Logic::And  ? (x && y)
           : kind == Logic::Or ? (x || y)
                               : (x != y);
  }
};
/// ONNX IsInf-20: which infinities count.
struct IsInf {
  bool negative, positive;
  template <typename Call> static IsInf of(const Call &call) {
    return {call.b("detect_negative"), call.b("detect_positive")};
  }
  template <typename T> WEFT_HOST_DEVICE bool operator()(T v) const {
    return (positive && v == T(INFINITY)) || (negative && v == T(-INFINITY));
  }
};
struct Relu {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    return v > T(0) ? v : T(0);
  }
};
struct Sigmoid {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::exp;
    return T(1) / (T(1) + exp(-v));
  }
};
/// x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))).
struct Gelu {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::erf;
    return T(0.5) * v * (T(1) + erf(v * T(0.70710678118654752440)));
  }
};
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GPT-2's gelu_new.
struct GeluTanh {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    using std::tanh;
    const T k = T(0.79788456080286535588), cubic = T(0.044715);
    return T(0.5) * v * (T(1) + tanh(k * (v + cubic * v * v * v)));
  }
};

/// x sigmoid(x): SiLU (Elfwing et al. 2017), SwiGLU's activation.
struct Silu {
  template <typename T> WEFT_HOST_DEVICE T operator()(T v) const {
    return v * Sigmoid()(v);
  }
};

struct Add {
  template <typename T> WEFT_HOST_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct Sub {
  template <typename T> WEFT_HOST_DEVICE T operator()(T a, T b) const {
    return a - b;
  }
};
struct Mul {
  template <typename T> WEFT_HOST_DEVICE T operator()(T a, T b) const {
    return a * b;
  }
};

/// ONNX Pow-15, computed in double (the exponent may be fractional or
/// negative; integers round the result back).
/// ONNX Max-13 (`Greatest`) / Min-13 of two operands, as torch.maximum and
/// torch.minimum: a NaN operand gives NaN (`a != a` is false for integers).
template <bool Greatest> struct Extremum {
  template <typename T> WEFT_HOST_DEVICE T operator()(T a, T b) const {
    if (a != a)
      return a;
    if (b != b)
      return b;
    return (Greatest ? a < b : b < a) ? b : a;
  }
};
using Max = Extremum<true>;
using Min = Extremum<false>;
struct Pow {
  template <typename T> WEFT_HOST_DEVICE T operator()(T a, T b) const {
    using std::pow;
    return static_cast<T>(pow(static_cast<double>(a), static_cast<double>(b)));
  }
};

/// ONNX Clip-13 with optional bounds (attributes min, max).
struct Clip {
  bool hasMin = false, hasMax = false;
  double lo = 0, hi = 0;
  /// The bounds of a clip or clip_grad call (a KernelCall).
  template <typename Call> static Clip of(const Call &call) {
    Clip c;
    c.hasMin = call.has("min");
    c.hasMax = call.has("max");
    c.lo = c.hasMin ? call.f("min") : 0;
    c.hi = c.hasMax ? call.f("max") : 0;
    return c;
  }
  template <typename T> WEFT_HOST_DEVICE T operator()(T x) const {
    double v = static_cast<double>(x);
    if (hasMin && v < lo)
      v = lo;
    if (hasMax && v > hi)
      v = hi;
    return static_cast<T>(v);
  }
  /// clip_grad: dy where the bounds let x through, else 0.
  template <typename T> WEFT_HOST_DEVICE T grad(T x, T dy) const {
    double v = static_cast<double>(x);
    return (!hasMin || v >= lo) && (!hasMax || v <= hi) ? dy : T(0);
  }
};

// The backward ops' elementwise gradients, of (x, dy): the derivative of
// the forward function at x times dy (formulas on the ops,
// docs/generated/Dialects/Weft.md).

/// dy where x > 0, else 0.
struct ReluGrad {
  template <typename T> WEFT_HOST_DEVICE T operator()(T x, T dy) const {
    return x > T(0) ? dy : T(0);
  }
};
/// dy (Phi(x) + x phi(x)), Phi the standard normal CDF and phi its density.
struct GeluGrad {
  template <typename T> WEFT_HOST_DEVICE T operator()(T x, T dy) const {
    using std::erf;
    using std::exp;
    const T invSqrt2 = T(0.70710678118654752440),
            invSqrt2Pi = T(0.39894228040143267794);
    T cdf = T(0.5) * (T(1) + erf(x * invSqrt2));
    T pdf = invSqrt2Pi * exp(T(-0.5) * x * x);
    return dy * (cdf + x * pdf);
  }
};
/// dy (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)), t = tanh(k (x + c
/// x^3)), k = sqrt(2/pi), c = 0.044715.
struct GeluTanhGrad {
  template <typename T> WEFT_HOST_DEVICE T operator()(T x, T dy) const {
    using std::tanh;
    const T k = T(0.79788456080286535588), cubic = T(0.044715);
    T t = tanh(k * (x + cubic * x * x * x));
    T inner = k * (T(1) + T(3) * cubic * x * x);
    return dy * T(0.5) * (T(1) + t + x * (T(1) - t * t) * inner);
  }
};

/// dy s (1 + x (1 - s)), s = sigmoid(x).
struct SiluGrad {
  template <typename T> WEFT_HOST_DEVICE T operator()(T x, T dy) const {
    T sig = Sigmoid()(x);
    return dy * sig * (T(1) + x * (T(1) - sig));
  }
};

/// glu (Shazeer 2020): y = act(g) u; its gradients dg = act'(g) (dy u)
/// and du = dy act(g). Act and ActGrad are one of the pairs above.
template <typename Act, typename ActGrad> struct Glu {
  template <typename T> WEFT_HOST_DEVICE T operator()(T g, T u) const {
    return Act()(g) * u;
  }
  template <typename T> WEFT_HOST_DEVICE T gateGrad(T g, T u, T dy) const {
    return ActGrad()(g, dy * u);
  }
  template <typename T> WEFT_HOST_DEVICE T upGrad(T g, T dy) const {
    return dy * Act()(g);
  }
};
using SwiGlu = Glu<Silu, SiluGrad>;
using GeGlu = Glu<Gelu, GeluGrad>;
using GeGluTanh = Glu<GeluTanh, GeluTanhGrad>;

/// f(the Glu of `activation`) (host code: the kernels' dispatch).
template <typename F> void withGlu(ops::GluActivation activation, F &&f) {
  switch (activation) {
  case ops::GluActivation::Silu:
    return f(SwiGlu());
  case ops::GluActivation::Gelu:
    return f(GeGlu());
  case ops::GluActivation::GeluTanh:
    return f(GeGluTanh());
  }
}

} // namespace weft::rt::math

#endif // WEFT_RUNTIME_KERNELS_ELEMENTWISEMATH_H
