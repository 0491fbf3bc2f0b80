//===- Launch.cuh - grids and strided operands of CUDA kernels -*- C++ -*-===//
//
// Every elementwise and movement kernel is a grid-stride loop over its
// output; operands that broadcast or are read through a view carry their
// strides over the output's dims (numpy's rule: 0 on a broadcast dim).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_LAUNCH_CUH
#define WEFT_RUNTIME_BACKENDS_CUDA_LAUNCH_CUH

#include "../../kernels/Kernel.h"

#include <algorithm>
#include <array>

namespace weft::rt::cuda {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

/// A grid for n elements: grid-stride loops cover the rest.
inline dim3 grid(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return dim3(unsigned(std::clamp<int64_t>(blocks, 1, 65535 * 16)));
}

#define WEFT_GRID_STRIDE(i, n)                                                 \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);    \
       i += int64_t(gridDim.x) * blockDim.x)

/// A grid of `rows` warps, for kernels that give a row to a warp.
inline dim3 warpGrid(int64_t rows) { return grid(rows * 32); }

/// `kernel<<<grid, block, 0, stream>>>(args...)`, spelled so the CUDA
/// emulator (emulator/Emulator.h, which defines it first) can run the
/// launch on the host, where C++ has no <<<>>>. A kernel whose template
/// arguments hold a comma goes in parentheses: WEFT_LAUNCH((k<A, B>), ...).
#ifndef WEFT_LAUNCH
#define WEFT_LAUNCH(kernel, grid, block, stream, ...)                          \
  kernel<<<grid, block, 0, stream>>>(__VA_ARGS__)
#endif

#define WEFT_WARP_STRIDE(row, rows)                                            \
  for (int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;    \
       row < (rows); row += int64_t(gridDim.x) * blockDim.x / 32)

/// The output's dims and K operands' element strides and bases over them,
/// passed by value to a kernel. Made with its dims coalesced, as PyTorch's
/// TensorIterator coalesces them: a dim of size 1 goes, and two adjacent
/// dims merge where every operand steps over the inner one's extent as it
/// steps once in the outer (so operands of the output's shape are one dim
/// of stride 1, a bias broadcast over rows is two). A thread then finds
/// its coordinates with rank - 1 divisions (the outermost coordinate is
/// what is left), in 32 bits when the output has under 2^31 elements:
/// 64-bit division is a long instruction sequence on a GPU and would make
/// an elementwise kernel compute-bound.
template <int K> struct Strided {
  int rank = 0;
  bool narrow = true; ///< fewer than 2^31 output elements
  int64_t dims[kMaxRank] = {};
  int64_t strides[K][kMaxRank] = {};
  int64_t base[K] = {};

  /// Fails naming the kernel when the output has more than kMaxRank dims.
  static Strided of(const KernelCall &call, const std::vector<int64_t> &out,
                    const std::array<std::vector<int64_t>, K> &strides,
                    const std::array<int64_t, K> &base = {}) {
    if (out.size() > size_t(kMaxRank))
      call.fail("rank " + std::to_string(out.size()) +
                " is over the CUDA backend's " + std::to_string(kMaxRank));
    Strided s;
    int64_t n = 1;
    for (size_t d = 0; d < out.size(); ++d) {
      n *= out[d];
      if (out[d] == 1)
        continue; // one coordinate, 0: no stride to apply
      bool merges = s.rank > 0;
      for (int k = 0; k < K && merges; ++k)
        merges = s.strides[k][s.rank - 1] == strides[k][d] * out[d];
      if (merges) { // the previous dim steps over this one: one dim
        s.dims[s.rank - 1] *= out[d];
        for (int k = 0; k < K; ++k)
          s.strides[k][s.rank - 1] = strides[k][d];
        continue;
      }
      s.dims[s.rank] = out[d];
      for (int k = 0; k < K; ++k)
        s.strides[k][s.rank] = strides[k][d];
      ++s.rank;
    }
    s.narrow = n < (int64_t(1) << 31);
    for (int k = 0; k < K; ++k)
      s.base[k] = base[k];
    return s;
  }

  /// Operand k's element read for output element i (0 <= i < the
  /// output's elements).
  __device__ void offsets(int64_t i, int64_t (&offset)[K]) const {
    for (int k = 0; k < K; ++k)
      offset[k] = base[k];
    if (narrow)
      walk(uint32_t(i), offset);
    else
      walk(i, offset);
  }

private:
  template <typename Index>
  __device__ void walk(Index i, int64_t (&offset)[K]) const {
    for (int d = rank - 1; d > 0; --d) {
      Index extent = Index(dims[d]), coord = i % extent;
      i /= extent;
      for (int k = 0; k < K; ++k)
        offset[k] += int64_t(coord) * strides[k][d];
    }
    if (rank > 0) // the outermost coordinate: what is left of i
      for (int k = 0; k < K; ++k)
        offset[k] += int64_t(i) * strides[k][0];
  }
};

/// Two operands broadcast to `y` (numpy's rule): a binary kernel's view.
inline Strided<2> broadcastPair(const KernelCall &call, const Tensor &a,
                                const Tensor &b, const Tensor &y) {
  return Strided<2>::of(
      call, y.shape,
      {broadcastStrides(a.shape, y.shape), broadcastStrides(b.shape, y.shape)});
}

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_LAUNCH_CUH
