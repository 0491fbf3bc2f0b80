//===- HalfTest.cpp - f16/bf16 conversions against exact references -------===//
//
// Half.h converts by bit manipulation (so CUDA kernels share it); the
// references here are independent: the compiler's _Float16 (correctly
// rounded IEEE conversions) for f16, and round-to-nearest-even computed in
// double arithmetic for bf16.
//
//===----------------------------------------------------------------------===//

#include "../../../runtime/kernels/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace weft::rt;

namespace {

uint16_t referenceF16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

/// f32 -> bf16 by rounding in double: the two bf16 neighbours of f and the
/// nearer (ties: the even mantissa).
uint16_t referenceBF16(float f) {
  uint32_t bits = floatBits(f);
  uint16_t down = uint16_t(bits >> 16), up = uint16_t(down + 1);
  double lo = fromBF16(down), hi = fromBF16(up), x = f;
  double dlo = std::fabs(x - lo), dhi = std::fabs(hi - x);
  if (dlo < dhi)
    return down;
  if (dhi < dlo)
    return up;
  return (down & 1) ? up : down;
}

} // namespace

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = fromF16(uint16_t(h));
    _Float16 reference;
    uint16_t bits = uint16_t(h);
    std::memcpy(&reference, &bits, 2);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(reference)));
      EXPECT_TRUE(std::isnan(fromF16(toF16(f))));
      continue;
    }
    ASSERT_EQ(floatBits(f), floatBits(static_cast<float>(reference)))
        << "f16 0x" << std::hex << h;
    ASSERT_EQ(toF16(f), h) << "f16 0x" << std::hex << h;
  }
}

TEST(Half, F16RoundsToNearestEvenLikeTheCompiler) {
  // Ties, the overflow threshold, the subnormal range and its underflow.
  std::vector<float> edges = {65504.0f,  65519.99f, 65520.0f,   65536.0f,
                              1e-8f,     2.98e-8f,  0x1p-25f,   0x1.8p-25f,
                              0x1p-24f,  0x1.8p-24f, 0x1.4p-24f, 0x1p-14f,
                              0x1.ffcp-15f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f,
                              std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::max(), 0.0f};
  for (float f : edges)
    for (float s : {f, -f})
      EXPECT_EQ(toF16(s), referenceF16(s)) << s;
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    float f = bitsFloat(any(rng));
    if (std::isnan(f))
      continue;
    ASSERT_EQ(toF16(f), referenceF16(f)) << f;
  }
}

TEST(Half, BF16RoundsToNearestEven) {
  // 1 + 2^-8 is a tie (rounds down to the even 1), 1 + 3 * 2^-8 a tie
  // that rounds up; the largest float rounds to infinity.
  EXPECT_EQ(toBF16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(toBF16(1.0f + 0x3p-8f), 0x3F82);
  EXPECT_EQ(toBF16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_TRUE(std::isnan(fromBF16(toBF16(std::nanf("")))));
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    float f = bitsFloat(any(rng));
    if (std::isnan(f) || std::isinf(f) ||
        std::fabs(f) > 0x1.fefffep127f) // rounds past the largest bf16
      continue;
    ASSERT_EQ(toBF16(f), referenceBF16(f)) << f;
  }
  // Truncation (ONNX Cast-13) drops the low half.
  EXPECT_EQ(truncBF16(1.0f + 0x3p-8f), 0x3F81);
}
