//===- Philox.h - Philox4x32-10 counter-based random numbers ----*- C++ -*-===//
//
// Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3" (SC'11). A
// pure function of (counter, key): any backend, any recompute of the same
// forward reproduces the same bits, which is what dropout masks need.
// Host and device (a CUDA kernel draws the CPU kernel's bits).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_PHILOX_H
#define WEFT_RUNTIME_KERNELS_PHILOX_H

#include "Half.h"

#include <cstdint>

namespace weft::rt {

/// Four 32-bit words: a counter, or the random bits of one block.
struct PhiloxBlock {
  uint32_t word[4];
  WEFT_HOST_DEVICE uint32_t operator[](int64_t i) const { return word[i]; }
};
/// The 64-bit key, low word first.
struct PhiloxKey {
  uint32_t word[2];
};

/// Ten Philox4x32 rounds of `counter` under `key`.
WEFT_HOST_DEVICE inline PhiloxBlock philox4x32(PhiloxBlock counter,
                                               PhiloxKey key) {
  constexpr uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
  constexpr uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;
  uint32_t *c = counter.word;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = uint64_t(kMul0) * c[0];
    uint64_t p1 = uint64_t(kMul1) * c[2];
    uint32_t next[4] = {uint32_t(p1 >> 32) ^ c[1] ^ key.word[0], uint32_t(p1),
                        uint32_t(p0 >> 32) ^ c[3] ^ key.word[1], uint32_t(p0)};
    for (int k = 0; k < 4; ++k)
      c[k] = next[k];
    key.word[0] += kWeyl0;
    key.word[1] += kWeyl1;
  }
  return counter;
}

/// A uniform float in [0, 1) from the top 24 bits of `bits`.
WEFT_HOST_DEVICE inline float uniform01(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_PHILOX_H
