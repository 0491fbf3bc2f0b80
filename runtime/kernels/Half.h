//===- Half.h - f16 and bf16 <-> f32, host and device ----------*- C++ -*-===//
//
// The 16-bit float formats the plan stores (IEEE 754 binary16 "f16", and
// bfloat16 "bf16": an f32's upper 16 bits) as raw uint16_t, converted by
// bit manipulation so the same functions compile for the host and, under
// nvcc, for the device: a CPU kernel and a CUDA kernel round identically.
//
//   - widening (fromF16, fromBF16) is exact;
//   - narrowing rounds to nearest, ties to even (IEEE 754 roundTiesToEven),
//     as torch's .to(torch.bfloat16 / torch.float16), CUDA's __float2half_rn
//     and __float2bfloat16_rn do: f16 overflows to infinity from 65520 on
//     and has subnormals down to 2^-24; NaN stays NaN (quiet);
//   - truncBF16 is ONNX Cast-13's conversion to bfloat16 (truncation, as
//     the ONNX 1.12 reference and its test data do; opset 19 specified
//     round-to-nearest-even later). weft-mixed-precision's casts round.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_HALF_H
#define WEFT_RUNTIME_KERNELS_HALF_H

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define WEFT_HOST_DEVICE __host__ __device__
#else
#define WEFT_HOST_DEVICE
#endif

namespace weft::rt {

WEFT_HOST_DEVICE inline uint32_t floatBits(float f) {
  uint32_t word;
  std::memcpy(&word, &f, 4);
  return word;
}

WEFT_HOST_DEVICE inline float bitsFloat(uint32_t word) {
  float f;
  std::memcpy(&f, &word, 4);
  return f;
}

WEFT_HOST_DEVICE inline float fromBF16(uint16_t bits) {
  return bitsFloat(uint32_t(bits) << 16);
}

/// f32 -> bf16, round to nearest even.
WEFT_HOST_DEVICE inline uint16_t toBF16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) // NaN: quiet, keep the sign
    return uint16_t((x >> 16) | 0x0040u);
  // Adding 0x7FFF plus the kept part's lowest bit rounds ties to even; a
  // carry out of the mantissa steps the exponent (up to infinity).
  x += 0x7FFFu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

/// f32 -> bf16 by truncation (ONNX Cast-13).
WEFT_HOST_DEVICE inline uint16_t truncBF16(float f) {
  uint32_t x = floatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FC0;
  return uint16_t(x >> 16);
}

WEFT_HOST_DEVICE inline float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  if (exponent == 0x1F) // infinity, NaN
    return bitsFloat(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) // zero, subnormal: mantissa * 2^-24, exact in f32
    return bitsFloat(sign | floatBits(float(mantissa) * 0x1p-24f));
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/// f32 -> f16, round to nearest even.
WEFT_HOST_DEVICE inline uint16_t toF16(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) // NaN
    return sign | 0x7E00u;
  if (a >= 0x477FF000u) // 65520 and up (and infinity): infinity
    return sign | 0x7C00u;
  if (a < 0x38800000u) { // below 2^-14: a subnormal f16, or zero
    uint32_t exponent = a >> 23;
    if (exponent < 102) // below 2^-25: rounds to zero
      return sign;
    // a = m 2^(exponent - 150); in units of 2^-24 that is m >> shift.
    uint32_t m = (a & 0x7FFFFFu) | 0x800000u, shift = 126 - exponent;
    uint32_t q = m >> shift, rest = m & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1u)))
      ++q;
    return sign | uint16_t(q);
  }
  // Normal: rebias the exponent (127 -> 15), keep 10 mantissa bits, round
  // on the 13 dropped; a carry steps the exponent, up to infinity.
  uint32_t h = ((a >> 23) - 112) << 10 | ((a >> 13) & 0x3FFu);
  uint32_t rest = a & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return sign | uint16_t(h);
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_HALF_H
