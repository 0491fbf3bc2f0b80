//===- CpuVector.h - the CPU kernels' vector loops ----------*- C++ -*-===//
//
// The CPU kernels whose elements call exp, erf, tanh or log (GELU and its
// gradient, softmax, cross-entropy, fused attention's softmax) and the
// AdamW update run as vector code, in the loops below, by two means:
//
//  - libmvec, glibc's vector math library: SIMD variants of expf, erff,
//    tanhf, logf and their double forms, 4 floats a call on x86-64's
//    baseline (SSE2, the x86-64 vector function ABI's 'b' variants) and
//    8 on AVX2 ('d'); their error is under 4 ulp (glibc manual, "Known
//    Maximum Errors in Math Functions"). GCC calls them from a vectorised
//    loop when the scalar function is declared `simd` (OpenMP 4.0's
//    declare simd). glibc declares so only under -ffast-math, which weft
//    does not use (it would reorder the sums the oracles fix), so this
//    header declares them. Every call in a file that includes it may be
//    vectorised.
//  - Per-CPU clones: WEFT_CPU_CLONES compiles a function for the baseline
//    and for x86-64-v3 (AVX2, FMA); the loader picks one for the machine it
//    runs on (GCC's target_clones, an ifunc), as torch's CPU_CAPABILITY
//    dispatch does, so one build runs at AVX2 width where there is AVX2
//    and still runs where there is none.
//
// The results differ from scalar libm's in the last ulps, and between a
// baseline and an AVX2 machine; on one machine they are the same every run.
// Without GCC on x86-64 Linux (clang's fuzzer builds) the loops are plain
// scalar loops and the results are libm's.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CPUVECTOR_H
#define WEFT_RUNTIME_KERNELS_CPUVECTOR_H

#include <cmath>
#include <cstdint>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    defined(__linux__) && !defined(__CUDACC__)
#define WEFT_CPU_CLONES                                                        \
  __attribute__((target_clones("default", "arch=x86-64-v3")))
#define WEFT_SIMD_LIBM __attribute__((simd("notinbranch")))
extern "C" {
// expf and logf have vector variants since glibc 2.22, erff and tanhf
// since 2.35 (Debian 12 has 2.36).
WEFT_SIMD_LIBM float expf(float) noexcept;
WEFT_SIMD_LIBM double exp(double) noexcept;
WEFT_SIMD_LIBM float logf(float) noexcept;
WEFT_SIMD_LIBM double log(double) noexcept;
#if __GLIBC_PREREQ(2, 35)
WEFT_SIMD_LIBM float erff(float) noexcept;
WEFT_SIMD_LIBM double erf(double) noexcept;
WEFT_SIMD_LIBM float tanhf(float) noexcept;
WEFT_SIMD_LIBM double tanh(double) noexcept;
#endif
}
#undef WEFT_SIMD_LIBM
#else
#define WEFT_CPU_CLONES
#endif

namespace weft::rt::vec {

/// out[i] = op(in[i]) for i in [0, n); `out` may be `in`.
template <typename T, typename Op>
WEFT_CPU_CLONES void map(const T *in, T *out, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<T>(op(in[i]));
}

/// out[i] = op(a[i], b[i]) for i in [0, n); `out` may be `a` or `b`.
template <typename T, typename Op>
WEFT_CPU_CLONES void map(const T *a, const T *b, T *out, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = static_cast<T>(op(a[i], b[i]));
}

/// The largest of x[0, n), n >= 1 (a NaN may or may not win).
template <typename T> WEFT_CPU_CLONES T max(const T *x, int64_t n) {
  T m = x[0];
#pragma omp simd reduction(max : m)
  for (int64_t i = 1; i < n; ++i)
    m = x[i] > m ? x[i] : m;
  return m;
}

/// ln of T's smallest normal number, rounded toward zero: for every T
/// below it, exp is a denormal, which the CPU backend flushes to zero (FTZ,
/// CpuBackend.cpp). CpuVectorTest holds both ends.
template <typename T> inline constexpr T kExpFlushedBelow = T();
template <> inline constexpr float kExpFlushedBelow<float> = -87.33654022f;
template <>
inline constexpr double kExpFlushedBelow<double> = -708.39641853226408;

/// exp(v), or 0 where v < lo = kExpFlushedBelow (exp's value there under
/// FTZ), without calling exp on such lanes: libmvec sends a whole vector to
/// its scalar fallback when one lane is outside its fast range (|v| beyond
/// about ln of the smallest normal, -inf included), five times slower, and
/// a causal mask's -inf scores put such a lane in nearly every vector of a
/// softmax row. The lanes are clamped and multiplied by 0 or 1 rather than
/// selected, so that the call stays unconditional (vectorised). NaN stays
/// NaN. `lo` is the caller's, read where GCC cannot see its value: knowing
/// it, GCC folds exp(lo) and turns the clamp into a branch, which no loop
/// vectorises.
template <typename T> inline T expOrFlushed(T v, T lo) {
  using std::exp;
  T keep = v < lo ? T(0) : T(1);
  return static_cast<T>(exp(v < lo ? lo : v)) * keep;
}

/// The sum of exp(x[i] - max) over [0, n), accumulated in double (in
/// vector lanes: the order differs from a serial sum's by rounding in
/// double only). With `y`, also y[i] = exp(x[i] - max) rounded to T.
template <typename T>
WEFT_CPU_CLONES double expSum(const T *x, int64_t n, T max, T *y) {
  volatile T opaque = kExpFlushedBelow<T>; // see expOrFlushed
  const T lo = opaque;
  double sum = 0;
  if (y) {
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) {
      T e = expOrFlushed<T>(x[i] - max, lo);
      y[i] = e;
      sum += e;
    }
    return sum;
  }
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i)
    sum += expOrFlushed<T>(x[i] - max, lo);
  return sum;
}

} // namespace weft::rt::vec

#endif // WEFT_RUNTIME_KERNELS_CPUVECTOR_H
