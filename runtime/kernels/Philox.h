//===- Philox.h - Philox4x32-10 counter-based random numbers ----*- C++ -*-===//
//
// Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3" (SC'11). A
// pure function of (counter, key): any backend, any recompute of the same
// forward reproduces the same bits, which is what dropout masks need.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_PHILOX_H
#define WEFT_RUNTIME_KERNELS_PHILOX_H

#include <array>
#include <cstdint>

namespace weft::rt {

using PhiloxBlock = std::array<uint32_t, 4>;

/// Ten Philox4x32 rounds of `counter` under `key`.
inline PhiloxBlock philox4x32(PhiloxBlock counter,
                              std::array<uint32_t, 2> key) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * counter[0];
    uint64_t p1 = uint64_t(kMul1) * counter[2];
    counter = {uint32_t(p1 >> 32) ^ counter[1] ^ key[0], uint32_t(p1),
               uint32_t(p0 >> 32) ^ counter[3] ^ key[1], uint32_t(p0)};
    key[0] += kWeyl0;
    key[1] += kWeyl1;
  }
  return counter;
}

/// A uniform float in [0, 1) from the top 24 bits of `bits`.
inline float uniform01(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_PHILOX_H
