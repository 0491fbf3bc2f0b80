//===- device_radix_sort.cuh - CUB's radix sort, for the CUDA emulator ----===//
//
// The CUDA emulator's stand-in for <cub/device/device_radix_sort.cuh> (its
// include directory comes before the toolkit's): DeviceRadixSort::SortPairs
// as CUB documents it, a stable ascending sort of (key, value) pairs by the
// keys' bits [beginBit, endBit), run on the host after the stream's work
// before it. The first call, without temporary storage, asks for its size,
// as CUB's does.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_CUB_DEVICE_RADIX_SORT_CUH
#define WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_CUB_DEVICE_RADIX_SORT_CUH

#include <cuda_runtime_api.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace weft::rt::cuda::emulator {
void order(cudaStream_t stream); // Emulator.h
} // namespace weft::rt::cuda::emulator

namespace cub {

struct DeviceRadixSort {
  template <typename Key, typename Value, typename Count>
  static cudaError_t
  SortPairs(void *temporary, size_t &temporaryBytes, const Key *keysIn,
            Key *keysOut, const Value *valuesIn, Value *valuesOut, Count count,
            int beginBit, int endBit, cudaStream_t stream = nullptr) {
    if (!temporary) {
      temporaryBytes = 1;
      return cudaSuccess;
    }
    // Stream-ordered, as CUB's: the kernels that wrote the keys run first.
    weft::rt::cuda::emulator::order(stream);
    auto digits = [&](Key key) {
      int width = endBit - beginBit;
      Key shifted = Key(key >> beginBit);
      return width >= int(8 * sizeof(Key))
                 ? shifted
                 : Key(shifted & ((Key(1) << width) - 1));
    };
    std::vector<size_t> sorted(static_cast<size_t>(count));
    std::iota(sorted.begin(), sorted.end(), size_t(0));
    std::stable_sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) {
      return digits(keysIn[a]) < digits(keysIn[b]);
    });
    std::vector<Key> keys(sorted.size());
    std::vector<Value> values(sorted.size());
    for (size_t i = 0; i < sorted.size(); ++i) {
      keys[i] = keysIn[sorted[i]];
      values[i] = valuesIn[sorted[i]];
    }
    std::copy(keys.begin(), keys.end(), keysOut);
    std::copy(values.begin(), values.end(), valuesOut);
    return cudaSuccess;
  }
};

} // namespace cub

#endif // WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_CUB_DEVICE_RADIX_SORT_CUH
