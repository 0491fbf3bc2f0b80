//===- device_radix_sort.cuh - CUB's radix sort, for the CUDA emulator ----===//
//
// The CUDA emulator's stand-in for <cub/device/device_radix_sort.cuh> (its
// include directory comes before the toolkit's): DeviceRadixSort::SortPairs
// as CUB documents it, a stable ascending sort of (key, value) pairs by the
// keys' bits [beginBit, endBit), run on the host. The first call, without
// temporary storage, asks for its size, as CUB's does.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_CUB_DEVICE_RADIX_SORT_CUH
#define WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_CUB_DEVICE_RADIX_SORT_CUH

#include <cuda_runtime_api.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace cub {

struct DeviceRadixSort {
  template <typename Key, typename Value, typename Count>
  static cudaError_t
  SortPairs(void *temporary, size_t &temporaryBytes, const Key *keysIn,
            Key *keysOut, const Value *valuesIn, Value *valuesOut, Count count,
            int beginBit, int endBit, cudaStream_t = nullptr) {
    if (!temporary) {
      temporaryBytes = 1;
      return cudaSuccess;
    }
    auto digits = [&](Key key) {
      int width = endBit - beginBit;
      Key shifted = Key(key >> beginBit);
      return width >= int(8 * sizeof(Key))
                 ? shifted
                 : Key(shifted & ((Key(1) << width) - 1));
    };
    std::vector<size_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return digits(keysIn[a]) < digits(keysIn[b]);
    });
    std::vector<Key> keys(order.size());
    std::vector<Value> values(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      keys[i] = keysIn[order[i]];
      values[i] = valuesIn[order[i]];
    }
    std::copy(keys.begin(), keys.end(), keysOut);
    std::copy(values.begin(), values.end(), valuesOut);
    return cudaSuccess;
  }
};

} // namespace cub

#endif // WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_CUB_DEVICE_RADIX_SORT_CUH
