//===- Values.h - the emulated libraries' element access ------*- C++ -*-===//
//
// f32, bf16 and f16 elements read into f32 and stored rounded to nearest
// even (Half.h), for the emulator's cuBLASLt and cuDNN; f32 rounded to
// TF32 as TF32 tensor cores read it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_VALUES_H
#define WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_VALUES_H

#include "../../../kernels/Half.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace weft::rt::cuda::emulator {

enum class Format { F32, BF16, F16 };

inline float load(Format f, const void *p, int64_t i) {
  if (f == Format::F32)
    return static_cast<const float *>(p)[i];
  uint16_t bits = static_cast<const uint16_t *>(p)[i];
  return f == Format::BF16 ? fromBF16(bits) : fromF16(bits);
}

inline void store(Format f, void *p, int64_t i, float v) {
  if (f == Format::F32)
    static_cast<float *>(p)[i] = v;
  else
    static_cast<uint16_t *>(p)[i] = f == Format::BF16 ? toBF16(v) : toF16(v);
}

/// `v` as TF32 (NVIDIA's tensor float: f32's sign and 8 exponent bits and
/// the top 10 of its 23 mantissa bits), rounded to nearest with ties away
/// from zero, as PTX's cvt.rna.tf32.f32 converts: what a TF32 tensor core
/// multiplies (f32 GEMMs under CUBLAS_COMPUTE_32F_FAST_TF32, f32
/// convolutions under CUDNN_DEFAULT_MATH). NaN and infinities pass.
inline float roundToTf32(float v) {
  if (!std::isfinite(v))
    return v;
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits = (bits + 0x1000u) & ~0x1fffu; // half of the 13 dropped bits' ulp
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

/// dst = alpha r + beta dst, where beta 0 does not read dst (the
/// libraries' rule: it may hold anything, NaN included).
inline void blendInto(float &dst, float alpha, float r, float beta) {
  dst = beta == 0 ? alpha * r : alpha * r + beta * dst;
}
/// The same for element i of `p`, stored as `f`.
inline void blendInto(Format f, void *p, int64_t i, float alpha, float r,
                      float beta) {
  store(f, p, i, beta == 0 ? alpha * r : alpha * r + beta * load(f, p, i));
}

} // namespace weft::rt::cuda::emulator

#endif // WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_VALUES_H
