//===- Accumulate.cu - column sums added in place ------------------------===//
//
// A micro-batch's bias gradient added into the running sum (wgrad_bias
// with accumulators, Gemm.cpp) where cuBLASLt has no epilogue for the
// GEMM: the column sums of dY, rounded, then added, without the scratch
// buffer (reduce_sum's partial sums would need it).
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "CudaKernels.h"
#include "Launch.cuh"
#include "Storage.cuh"

namespace weft::rt::cuda {

namespace {

constexpr int kColumns = 32, kRowLanes = 32, kBlock = kColumns * kRowLanes;

/// sum[n] = sum[n] + rounded(dY[:, n] summed over the rows): a block per
/// 32 columns, its 32 rows of lanes striding the rows, combined in
/// shared memory in a fixed order (deterministic).
template <Storage S>
__global__ void __launch_bounds__(kBlock)
    addColumnSumsKernel(void *sum, const void *dy, int64_t rows, int64_t cols) {
  __shared__ float partial[kRowLanes][kColumns + 1];
  int64_t col = int64_t(blockIdx.x) * kColumns + threadIdx.x;
  float acc = 0;
  if (col < cols)
    for (int64_t r = threadIdx.y; r < rows; r += kRowLanes)
      acc += load<S>(dy, r * cols + col);
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || col >= cols)
    return;
  float total = 0;
  for (int lane = 0; lane < kRowLanes; ++lane)
    total += partial[lane][threadIdx.x];
  store<S>(sum, col, load<S>(sum, col) + rounded<S>(total));
}

} // namespace

void addColumnSums(const KernelCall &call, const Context &ctx,
                   const Tensor &sum, const Tensor &dy) {
  int64_t rows = dy.shape[0], cols = dy.shape[1];
  if (cols == 0)
    return;
  dim3 blocks(unsigned((cols + kColumns - 1) / kColumns));
  dim3 threads(kColumns, kRowLanes);
  byStorage(call, sum.dtype, [&]<Storage S>() {
    WEFT_LAUNCH(addColumnSumsKernel<S>, blocks, threads, ctx.stream, sum.data,
                dy.data, rows, cols);
  });
  WEFT_CUDA_CHECK(cudaGetLastError());
}

} // namespace weft::rt::cuda
