//===- Storage.cuh - the float formats CUDA kernels read -------*- C++ -*-===//
//
// Kernels are instantiated per storage format (f32, bf16, f16) and compute
// in f32 registers: load() widens exactly, store() rounds to nearest even
// (Half.h, the CPU's conversions). Also the device side of Fault.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_STORAGE_CUH
#define WEFT_RUNTIME_BACKENDS_CUDA_STORAGE_CUH

#include "CudaKernels.h"

#include "../../kernels/Half.h"

namespace weft::rt::cuda {

/// Storage formats a kernel is instantiated for.
enum class Storage { F32, BF16, F16 };

template <Storage S> __device__ float load(const void *p, int64_t i) {
  if constexpr (S == Storage::F32)
    return static_cast<const float *>(p)[i];
  else if constexpr (S == Storage::BF16)
    return fromBF16(static_cast<const uint16_t *>(p)[i]);
  else
    return fromF16(static_cast<const uint16_t *>(p)[i]);
}

template <Storage S> __device__ void store(void *p, int64_t i, float v) {
  if constexpr (S == Storage::F32)
    static_cast<float *>(p)[i] = v;
  else if constexpr (S == Storage::BF16)
    static_cast<uint16_t *>(p)[i] = toBF16(v);
  else
    static_cast<uint16_t *>(p)[i] = toF16(v);
}

/// `v` as storage S holds it: rounded to S and widened back (what a load
/// of a store gives).
template <Storage S> __device__ float rounded(float v) {
  if constexpr (S == Storage::F32)
    return v;
  else if constexpr (S == Storage::BF16)
    return fromBF16(toBF16(v));
  else
    return fromF16(toF16(v));
}

/// Calls fn.template operator()<S>() for `dtype`'s storage.
template <typename Fn>
void byStorage(const KernelCall &call, DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F32:
    return fn.template operator()<Storage::F32>();
  case DType::BF16:
    return fn.template operator()<Storage::BF16>();
  case DType::F16:
    return fn.template operator()<Storage::F16>();
  default:
    unsupported(call, dtype);
  }
}

/// An integer index or label of a 32- or 64-bit tensor.
__device__ inline int64_t loadIndex(const void *p, bool wide, int64_t i) {
  return wide ? static_cast<const int64_t *>(p)[i]
              : static_cast<const int32_t *>(p)[i];
}

/// Records a fault unless one is recorded already (the first wins).
__device__ inline void raise(Fault *fault, Fault::Kind kind,
                             int64_t instruction, int64_t value,
                             int64_t bound) {
  if (atomicCAS(&fault->kind, int(Fault::None), int(kind)) == Fault::None) {
    fault->instruction = instruction;
    fault->value = value;
    fault->bound = bound;
    __threadfence_system();
  }
}

/// Sum of `v` over the 32 lanes of a warp, every lane receiving it.
template <typename T> __device__ T warpSum(T v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
template <typename T> __device__ T warpMax(T v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    T other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = other > v ? other : v;
  }
  return v;
}

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_STORAGE_CUH
