//===- CpuVectorTest.cpp - the CPU kernels' vector loops ------------------===//
//
// The kernels that run in vector loops (runtime/kernels/CpuVector.h:
// glibc's libmvec, per-CPU clones) against references in long double:
// the elementary functions within libmvec's documented 4 ulp, the
// composites (GELU, its gradient, softmax, cross-entropy's gradient)
// within the error those 4 ulp propagate to, and the contiguous softmax
// rows against the strided ones, which stay scalar loops. The lengths are
// not multiples of 8, so the loops' scalar tails run too.
//
//===----------------------------------------------------------------------===//

#include "HostKernel.h"

#include "../../../runtime/kernels/CpuVector.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <random>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

using namespace weft::rt;

namespace {

using F32 = test::Host<float>;
using test::launch;

/// n values uniform in [lo, hi], seeded.
std::vector<float> uniform(int64_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// The spacing of floats at |v| (an ulp; FLT_TRUE_MIN below the normals).
double ulp(long double v) {
  float f = std::fabs(static_cast<float>(v));
  return f < FLT_MIN ? FLT_TRUE_MIN
                     : std::nextafter(f, INFINITY) - static_cast<double>(f);
}

/// A row's max and log(sum(exp(x))), in long double.
struct RowStats {
  long double max = -INFINITY, logSumExp;
  RowStats(const float *x, int64_t n) {
    long double sum = 0;
    for (int64_t i = 0; i < n; ++i)
      max = std::max<long double>(max, x[i]);
    for (int64_t i = 0; i < n; ++i)
      sum += std::exp(x[i] - max);
    logSumExp = max + std::log(sum);
  }
};

using Reference = long double (*)(long double);

/// The unary kernel over `x` is within `ulps` of the long double reference.
void expectWithinUlps(const char *kernel, const std::vector<float> &x,
                      Reference reference, double ulps) {
  F32 in({int64_t(x.size())}, x), out({int64_t(x.size())});
  launch(kernel, {in}, {out});
  for (size_t i = 0; i < x.size(); ++i) {
    long double want = reference(x[i]);
    ASSERT_LE(std::fabs(out.v[i] - want), ulps * ulp(want))
        << kernel << "(" << x[i] << ") = " << out.v[i] << ", want "
        << double(want);
  }
}

} // namespace

TEST(CpuVectorLoops, ElementaryFunctionsStayWithinLibmvecsUlps) {
  // glibc documents libmvec's float functions at 4 ulp at most.
  expectWithinUlps(
      "exp", uniform(1003, -80, 80, 1),
      [](long double v) { return std::exp(v); }, 4);
  expectWithinUlps(
      "erf", uniform(1003, -6, 6, 2), [](long double v) { return std::erf(v); },
      4);
  expectWithinUlps(
      "tanh", uniform(1003, -12, 12, 3),
      [](long double v) { return std::tanh(v); }, 4);
  expectWithinUlps(
      "log", uniform(1003, 1e-30f, 1e30f, 4),
      [](long double v) { return std::log(v); }, 4);
  expectWithinUlps(
      "log", uniform(1003, 0.5f, 2, 5),
      [](long double v) { return std::log(v); }, 4);
}

TEST(CpuVectorLoops, GeluAndItsGradientStayWithinTheirPropagatedError) {
  // gelu(x) = 0.5 x (1 + erf(x / sqrt 2)): erf's 4 ulp (<= 4 eps, as
  // |erf| <= 1) times 0.5 |x|, plus the half ulps of five float roundings
  // on a result of at most |x|. The gradient, dy (Phi(x) + x phi(x)),
  // adds exp's 4 ulp on x phi(x) <= 0.25: within 8 eps |x| dy.
  std::vector<float> x = uniform(1003, -9, 9, 6), dy = uniform(1003, -2, 2, 7);
  F32 in({1003}, x), g({1003}, dy), y({1003}), dx({1003});
  launch("gelu", {in}, {y});
  launch("gelu_grad", {in, g}, {dx});
  const long double invSqrt2 = 0.7071067811865475244008443621L,
                    invSqrt2Pi = 0.3989422804014326779399460599L;
  for (size_t i = 0; i < x.size(); ++i) {
    long double v = x[i], cdf = 0.5L * (1 + std::erf(v * invSqrt2));
    long double pdf = invSqrt2Pi * std::exp(-0.5L * v * v);
    double bound = 8 * FLT_EPSILON * (std::fabs(x[i]) + 1);
    EXPECT_NEAR(y.v[i], double(v * cdf), bound) << "gelu(" << x[i] << ")";
    EXPECT_NEAR(dx.v[i], double(dy[i] * (cdf + v * pdf)),
                bound * std::fabs(dy[i]))
        << "gelu_grad(" << x[i] << ", " << dy[i] << ")";
  }
}

TEST(CpuVectorLoops, ContiguousSoftmaxRowsEqualTheStridedOnes) {
  // Rows of 261 along the last axis (the vector path) and the same rows
  // down axis 0 of the transpose (the strided path, scalar libm): one
  // row is masked to -inf but for one element, one holds 1e30s (exp of
  // x - max never overflows).
  const int64_t rows = 5, dim = 261;
  std::vector<float> x = uniform(rows * dim, -30, 30, 8);
  for (int64_t d = 1; d < dim; ++d)
    x[1 * dim + d] = -INFINITY;
  for (int64_t d = 0; d < dim; ++d)
    x[2 * dim + d] = 1e30f - float(d) * 1e24f;
  F32 byRow({rows, dim}, x), byColumn({dim, rows});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < dim; ++d)
      byColumn.v[d * rows + r] = x[r * dim + d];
  for (const char *kernel : {"softmax", "log_softmax"}) {
    bool log = std::string(kernel) == "log_softmax";
    F32 y({rows, dim}), yt({dim, rows});
    launch(kernel, {byRow}, {y}, {{"axis", 1}});
    launch(kernel, {byColumn}, {yt}, {{"axis", 0}});
    for (int64_t r = 0; r < rows; ++r) {
      RowStats row(&x[r * dim], dim);
      for (int64_t d = 0; d < dim; ++d) {
        long double shifted = x[r * dim + d] - row.max;
        long double want = log ? x[r * dim + d] - row.logSumExp
                               : std::exp(x[r * dim + d] - row.logSumExp);
        float got = y.v[r * dim + d], strided = yt.v[d * rows + r];
        if (std::isinf(shifted)) { // masked: 0, or -inf
          ASSERT_EQ(got, float(want)) << kernel << " row " << r;
          ASSERT_EQ(strided, float(want)) << kernel << " row " << r;
          continue;
        }
        // x - max rounds in float (half an ulp of the shift, which exp
        // turns into a relative error); exp's 4 ulp, the constant's and
        // the product's roundings.
        double bound = log ? 2 * ulp(shifted) + 4 * ulp(want)
                           : double(want) * ulp(shifted) + 6 * ulp(want);
        ASSERT_NEAR(got, double(want), bound)
            << kernel << " row " << r << " element " << d;
        ASSERT_NEAR(got, strided, 2 * bound)
            << kernel << " row " << r << " element " << d;
      }
    }
  }
}

TEST(CpuVectorLoops, CrossEntropyGradientRowsFollowTheirSoftmax) {
  // softmax_cross_entropy_grad over [N, C] (contiguous rows, the vector
  // path) from the scores and their log-sum-exp: (softmax - onehot) scale,
  // scale = dloss / N ("mean"); exp is taken in double there.
  const int64_t n = 3, classes = 1001;
  std::vector<float> x = uniform(n * classes, -12, 12, 9);
  F32 scores({n, classes}, x), dloss({}, {0.75f}), lse({n}), loss({}),
      grad({n, classes});
  test::Host<int64_t> labels({n}, {7, 0, classes - 1});
  launch("softmax_cross_entropy", {scores, labels}, {loss, lse},
         {{"reduction", "mean"}, {"log_sum_exp", true}});
  launch("softmax_cross_entropy_grad", {scores, labels, dloss, lse}, {grad},
         {{"reduction", "mean"}, {"log_sum_exp", true}});
  long double total = 0;
  for (int64_t r = 0; r < n; ++r) {
    long double logSumExp = RowStats(&x[r * classes], classes).logSumExp;
    // The log-sum-exp is stored in f32: its ulp at up to 12 + log(1001).
    ASSERT_NEAR(lse.v[r], double(logSumExp), 2 * ulp(logSumExp)) << r;
    total -= x[r * classes + labels.v[r]] - logSumExp;
    for (int64_t c = 0; c < classes; ++c) {
      long double logp = x[r * classes + c] - logSumExp, p = std::exp(logp);
      long double want = (p - (c == labels.v[r])) * 0.75L / n;
      // The stored lse's 2 ulp and x - lse's rounding in float move p by
      // p times their sum; the float result rounds.
      double bound =
          double(p) * (2 * ulp(logSumExp) + ulp(logp)) * 0.75 / n + ulp(want);
      ASSERT_NEAR(grad.v[r * classes + c], double(want), bound)
          << "row " << r << " class " << c;
    }
  }
  // Each row's -(x - max - log(sum)) rounds three times at magnitudes up
  // to |x - max| + log(sum) <= 24 + log(1001).
  EXPECT_NEAR(loss.v[0], double(total / n), 4 * ulp(24 + std::log(1001.0L)));
}

template <typename T> class ExpFlushedBelow : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ExpFlushedBelow, FloatTypes);

TYPED_TEST(ExpFlushedBelow, IsLnOfTheSmallestNormalRoundedTowardZero) {
  // exp of the bound is still normal, exp of the next value below it is a
  // denormal: expOrFlushed's 0 there is exactly what FTZ makes of exp.
  using T = TypeParam;
  constexpr T lo = weft::rt::vec::kExpFlushedBelow<T>;
  long double least = std::numeric_limits<T>::min();
  EXPECT_GE(std::exp(static_cast<long double>(lo)), least);
  EXPECT_LT(std::exp(static_cast<long double>(
                std::nextafter(lo, -std::numeric_limits<T>::infinity()))),
            least);
}

TEST(CpuVectorLoops, ExpSumFlushesWhatFtzFlushes) {
  // Shifted values crossing the bound, with -inf and NaN: under FTZ and
  // DAZ (the CPU backend's mode) expSum's elements are scalar libm's exp
  // of each, within libmvec's 4 ulp, 0 exactly where that is 0, NaN for
  // NaN, and so is their sum.
#if defined(__SSE__)
  unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040);
  constexpr float lo = weft::rt::vec::kExpFlushedBelow<float>;
  std::vector<float> x = uniform(1003, -120, 0, 10);
  x[5] = -INFINITY;
  x[17] = lo;
  x[18] = std::nextafter(lo, -INFINITY);
  std::vector<float> y(x.size());
  double sum = weft::rt::vec::expSum<float>(x.data(), x.size(), 0, y.data());
  // The sum is within the elements' 4 ulp each of scalar libm's (its own
  // rounding in double is far below).
  long double want = 0, bound = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    volatile float scalar = std::exp(x[i]);
    want += scalar;
    bound += scalar == 0 ? 0 : 4 * ulp(scalar);
    if (scalar == 0)
      ASSERT_EQ(y[i], 0.0f) << "exp(" << x[i] << ")";
    else
      ASSERT_NEAR(y[i], scalar, 4 * ulp(scalar)) << "exp(" << x[i] << ")";
  }
  EXPECT_GT(y[17], 0.0f);
  EXPECT_EQ(y[18], 0.0f);
  EXPECT_NEAR(sum, double(want), double(bound) + 1e-12 * double(want));
  x[40] = NAN;
  sum = weft::rt::vec::expSum<float>(x.data(), x.size(), 0, y.data());
  EXPECT_TRUE(std::isnan(y[40]));
  EXPECT_TRUE(std::isnan(sum));
  _mm_setcsr(saved);
#else
  GTEST_SKIP() << "FTZ/DAZ are set through SSE's MXCSR; not on this target";
#endif
}
