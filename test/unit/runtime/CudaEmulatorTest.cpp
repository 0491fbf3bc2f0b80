//===- CudaEmulatorTest.cpp - the CUDA emulator keeps CUDA's rules --------===//
//
// The emulator (runtime/backends/cuda/emulator) is what lets CI run the
// CUDA backend's kernels, so its own semantics are tested here with small
// kernels: built-in indices over 2-D grids and blocks, block barriers and
// shared arrays, warp shuffles (the backend's warpSum), the launch limits
// CUDA enforces, the undefined waits it refuses, its CUB sort, its device
// memory, its cuBLASLt and cuDNN, and the fault path a bad index takes
// through the backend.
//
//===----------------------------------------------------------------------===//

#include "../../../runtime/backends/cuda/emulator/Emulator.h"

#include "CudaConformance.h"

#include "../../../runtime/backends/cuda/CublasLt.h"
#include "../../../runtime/backends/cuda/CudaKernels.h"
#ifdef WEFT_HAVE_CUDNN
#include "../../../runtime/backends/cuda/Cudnn.h"
#endif
#include "../../../runtime/backends/cuda/Launch.cuh"
#include "../../../runtime/backends/cuda/Storage.cuh"
#include "../../../runtime/backends/cuda/emulator/Values.h"
#include "../../../runtime/backends/cuda/emulator/include/cub/device/device_radix_sort.cuh"
#include "../../../runtime/kernels/Fused.h"
#include "weft/runtime/Backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>
#include <utility>

using namespace weft::rt;
using weft::rt::cuda::kThreads;

namespace {

/// Each thread writes its global linear index at that index.
__global__ void indexKernel(int64_t *out) {
  int64_t block = blockIdx.y * int64_t(gridDim.x) + blockIdx.x;
  int64_t thread = threadIdx.y * int64_t(blockDim.x) + threadIdx.x;
  int64_t size = int64_t(blockDim.x) * blockDim.y;
  out[block * size + thread] = block * size + thread;
}

TEST(CudaEmulator, IndicesCoverA2DGridOf2DBlocks) {
  std::vector<int64_t> out(3 * 2 * 16 * 4, -1);
  WEFT_LAUNCH(indexKernel, dim3(3, 2), dim3(16, 4), nullptr, out.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i], int64_t(i));
}

/// A shared-memory tree sum: wrong unless every __syncthreads holds.
__global__ void treeSumKernel(const float *x, float *sums) {
  __shared__ float part[kThreads];
  part[threadIdx.x] = x[blockIdx.x * kThreads + threadIdx.x];
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    sums[blockIdx.x] = part[0];
}

TEST(CudaEmulator, BarriersOrderASharedTreeSum) {
  std::vector<float> x(3 * kThreads), sums(3);
  std::iota(x.begin(), x.end(), 0.0f);
  WEFT_LAUNCH(treeSumKernel, 3, kThreads, nullptr, x.data(), sums.data());
  for (int b = 0; b < 3; ++b) // the sum of b*256 .. b*256+255
    EXPECT_EQ(sums[b], float(256 * 256 * b + 255 * 128)) << "block " << b;
}

/// The backend's warp reductions: every lane gets the warp's total.
__global__ void warpSumKernel(const double *x, double *sums, double *maxima) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  sums[i] = cuda::warpSum(x[i]);
  maxima[i] = cuda::warpMax(x[i]);
}

TEST(CudaEmulator, ShufflesReduceEachWarp) {
  std::vector<double> x(2 * 64), sums(x.size()), maxima(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = double((i * 37) % 101);
  WEFT_LAUNCH(warpSumKernel, 2, 64, nullptr, x.data(), sums.data(),
              maxima.data());
  for (size_t warp = 0; warp < x.size() / 32; ++warp) {
    double sum = 0, max = 0;
    for (size_t lane = 0; lane < 32; ++lane) {
      sum += x[warp * 32 + lane];
      max = std::max(max, x[warp * 32 + lane]);
    }
    for (size_t lane = 0; lane < 32; ++lane) {
      EXPECT_EQ(sums[warp * 32 + lane], sum) << warp << ", " << lane;
      EXPECT_EQ(maxima[warp * 32 + lane], max) << warp << ", " << lane;
    }
  }
}

__global__ void countKernel(int *count) { ++*count; }

TEST(CudaEmulator, RefusesWhatCudaRefusesToLaunch) {
  int count = 0;
  WEFT_LAUNCH(countKernel, 1, 1025, nullptr, &count); // over 1024 a block
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  WEFT_LAUNCH(countKernel, dim3(1, 65536), 1, nullptr, &count);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess); // reading clears it
  WEFT_LAUNCH(countKernel, 2, 1024, nullptr, &count);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(count, 2048);
}

/// Lanes 16.. of each warp leave before the shuffle the others wait at.
__global__ void partialShuffleKernel(float *x) {
  if (threadIdx.x % 32 >= 16)
    return;
  x[threadIdx.x] = cuda::warpSum(x[threadIdx.x]);
}

/// Thread 0 leaves before the barrier the others wait at.
__global__ void earlyExitKernel(float *x) {
  __shared__ float part[kThreads];
  if (threadIdx.x == 0)
    return;
  part[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = part[kThreads - threadIdx.x];
}

/// A block of 48 threads: its second warp is partial.
__global__ void partialWarpKernel(float *x) {
  x[threadIdx.x] = cuda::warpSum(x[threadIdx.x]);
}

TEST(CudaEmulator, FailsWaitsUndefinedOnAGpu) {
  std::vector<float> x(kThreads, 1.0f);
  auto message = [](auto &&launch) {
    try {
      launch();
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] {
              WEFT_LAUNCH(partialShuffleKernel, 1, 64, nullptr, x.data());
            }),
            "CUDA emulator: block (0, 0, 0): 16 of warp 0's lanes wait at a "
            "full-mask shuffle the others never reach (undefined on a GPU)");
  EXPECT_EQ(message([&] {
              WEFT_LAUNCH(earlyExitKernel, 1, kThreads, nullptr, x.data());
            }),
            "CUDA emulator: block (0, 0, 0): 255 threads wait at "
            "__syncthreads that 1 others ended without reaching (undefined "
            "on a GPU)");
  EXPECT_EQ(message([&] {
              WEFT_LAUNCH(partialWarpKernel, 1, 48, nullptr, x.data());
            }),
            "CUDA emulator: block (0, 0, 0): 16 of warp 1's lanes wait at a "
            "full-mask shuffle the others never reach (undefined on a GPU)");
  // The emulator goes on after a failed launch.
  std::fill(x.begin(), x.end(), 1.0f);
  std::vector<float> sums(1);
  WEFT_LAUNCH(treeSumKernel, 1, kThreads, nullptr, x.data(), sums.data());
  EXPECT_EQ(sums[0], float(kThreads));
}

/// CUB's contract: stable, by the bits [begin, end) only.
TEST(CudaEmulator, RadixSortIsStableOverItsBits) {
  std::vector<uint32_t> keys = {0x105, 0x003, 0x205, 0x001, 0x003, 0x005};
  std::vector<uint32_t> values = {0, 1, 2, 3, 4, 5}, sortedKeys(6), order(6);
  size_t bytes = 0;
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(),
                                            sortedKeys.data(), values.data(),
                                            order.data(), 6, 0, 8),
            cudaSuccess);
  std::vector<char> temporary(bytes);
  ASSERT_EQ(cub::DeviceRadixSort::SortPairs(
                temporary.data(), bytes, keys.data(), sortedKeys.data(),
                values.data(), order.data(), 6, 0, 8),
            cudaSuccess);
  EXPECT_EQ(order, (std::vector<uint32_t>{3, 1, 4, 0, 2, 5}));
  EXPECT_EQ(sortedKeys,
            (std::vector<uint32_t>{0x001, 0x003, 0x003, 0x105, 0x205, 0x005}));
}

TEST(CudaEmulator, CountsDeviceMemoryAndChecksPitches) {
  size_t free0 = 0, total = 0, free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  void *p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 1000), cudaSuccess);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, 1024u); // rounded to cudaMalloc's 256 bytes
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaErrorInvalidValue); // twice
  char src[8] = "abcdefg", dst[8] = {};
  EXPECT_EQ(cudaMemcpy2DAsync(dst, 4, src, 2, 3, 2, cudaMemcpyDefault, nullptr),
            cudaErrorInvalidPitchValue);
  EXPECT_EQ(cudaMemcpy2DAsync(dst, 4, src, 3, 2, 2, cudaMemcpyDefault, nullptr),
            cudaSuccess);
  EXPECT_EQ(std::string(dst, 6), std::string("ab\0\0de", 6));
}

/// The emulator's cuBLASLt keeps cuBLASLt's column-major contract, its bias
/// epilogues (per row of D) and its refusals, apart from Gemm.cpp.
TEST(CudaEmulator, CublasLtKeepsItsContract) {
  const cuda::CublasLt &lt = cuda::CublasLt::get();
  // A = [[1, 2, 3], [4, 5, 6]], B = [[1, 0], [0, 1], [1, 1]], column-major.
  std::vector<float> a = {1, 4, 2, 5, 3, 6}, b = {1, 0, 1, 0, 1, 1};
  std::vector<float> d(4), bias = {100, 200}, sums(2);
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, ld, bad;
  ASSERT_EQ(lt.cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  lt.cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 2, 3, 2);
  lt.cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 2, 3);
  lt.cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 2, 2, 2);
  lt.cublasLtMatrixLayoutCreate(&bad, CUDA_R_32F, 2, 3, 1); // ld < rows
  float one = 1, zero = 0;
  auto epilogue = [&](cublasLtEpilogue_t kind, void *vector) {
    lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &kind,
                                      sizeof kind);
    lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                      &vector, sizeof vector);
  };
  auto run = [&](cublasLtMatrixLayout_t layoutA) {
    return lt.cublasLtMatmul(nullptr, op, &one, a.data(), layoutA, b.data(), lb,
                             &zero, d.data(), ld, d.data(), ld, nullptr,
                             nullptr, 0, nullptr);
  };
  epilogue(CUBLASLT_EPILOGUE_BIAS, bias.data());
  ASSERT_EQ(run(la), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(d, (std::vector<float>{104, 210, 105, 211}));
  epilogue(CUBLASLT_EPILOGUE_BGRADA, sums.data());
  ASSERT_EQ(run(la), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(sums, (std::vector<float>{6, 15})); // A's rows over k
  EXPECT_EQ(d, (std::vector<float>{4, 10, 5, 11}));
  EXPECT_EQ(run(bad), CUBLAS_STATUS_INVALID_VALUE);
  int64_t auxLd = 2; // the GELU's auxiliary ld must be a multiple of 8
  epilogue(CUBLASLT_EPILOGUE_GELU_AUX, nullptr);
  lt.cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                    &auxLd, sizeof auxLd);
  void *aux = sums.data();
  lt.cublasLtMatmulDescSetAttribute(
      op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux);
  EXPECT_EQ(run(la), CUBLAS_STATUS_NOT_SUPPORTED);
  for (cublasLtMatrixLayout_t layout : {la, lb, ld, bad})
    lt.cublasLtMatrixLayoutDestroy(layout);
  lt.cublasLtMatmulDescDestroy(op);
}

/// The emulated libraries' algorithm queries since the last call (or
/// since it was made).
struct QueriesSince {
  int64_t start = cuda::emulator::deviceTotals().algorithmQueries;
  int64_t operator()() {
    int64_t now = cuda::emulator::deviceTotals().algorithmQueries;
    return now - std::exchange(start, now);
  }
};

/// An algorithm from the emulated heuristic runs only the problem it was
/// asked about, on operands as aligned as the preference promised
/// (cublasLt.h); a null one is the implicit heuristic query.
TEST(CudaEmulator, CublasLtRunsAnAlgorithmOnlyOnItsProblem) {
  const cuda::CublasLt &lt = cuda::CublasLt::get();
  // [2, 2] = [2, 2] x [2, 2], column-major, operands 16-byte aligned.
  alignas(64) float a[5] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, d[4];
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t square, wide;
  cublasLtMatmulPreference_t preference;
  lt.cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  lt.cublasLtMatrixLayoutCreate(&square, CUDA_R_32F, 2, 2, 2);
  lt.cublasLtMatrixLayoutCreate(&wide, CUDA_R_32F, 2, 2, 4); // ld 4
  lt.cublasLtMatmulPreferenceCreate(&preference);
  uint32_t sixteen = 16;
  for (auto attribute : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                         CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    lt.cublasLtMatmulPreferenceSetAttribute(preference, attribute, &sixteen,
                                            sizeof sixteen);
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  int64_t asked = cuda::emulator::deviceTotals().algorithmQueries;
  ASSERT_EQ(lt.cublasLtMatmulAlgoGetHeuristic(nullptr, op, square, square,
                                              square, square, preference, 1,
                                              &result, &found),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(found, 1);
  EXPECT_EQ(cuda::emulator::deviceTotals().algorithmQueries, asked + 1);
  float one = 1, zero = 0;
  auto run = [&](const float *left, cublasLtMatrixLayout_t layout,
                 const cublasLtMatmulAlgo_t *algo) {
    return lt.cublasLtMatmul(nullptr, op, &one, left, layout, b, square, &zero,
                             d, square, d, square, algo, nullptr, 0, nullptr);
  };
  ASSERT_EQ(run(a, square, &result.algo), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(std::vector<float>(d, d + 4), std::vector<float>(a, a + 4));
  EXPECT_EQ(run(a + 1, square, &result.algo), CUBLAS_STATUS_INVALID_VALUE)
      << "A 4 bytes past the promised 16";
  EXPECT_EQ(run(a, wide, &result.algo), CUBLAS_STATUS_INVALID_VALUE)
      << "another problem";
  EXPECT_EQ(run(a + 1, square, nullptr), CUBLAS_STATUS_SUCCESS);
  lt.cublasLtMatmulPreferenceDestroy(preference);
  lt.cublasLtMatrixLayoutDestroy(wide);
  lt.cublasLtMatrixLayoutDestroy(square);
  lt.cublasLtMatmulDescDestroy(op);
}

/// The backend asks cuBLASLt's heuristic once per GEMM configuration
/// (GemmPlan.h): a repeated GEMM reuses its plan, with this call's bias in
/// the epilogue; another alignment or epilogue is another configuration.
TEST(CudaEmulator, GemmPlansAskTheHeuristicOncePerConfiguration) {
  auto gpu = createCudaBackend(0);
  // A [2, 3], B [3, 4], two biases [4] (both 128-byte aligned), Y [2, 4];
  // A also at a 4-byte offset, all in one arena.
  float *arena = static_cast<float *>(gpu->allocateArena(64 * 7));
  float *a = arena, *b = arena + 16, *bias1 = arena + 32, *bias2 = arena + 96,
        *y = arena + 48, *shifted = arena + 81;
  std::vector<float> av = {1, 2, 3, 4, 5, 6},
                     bv = {1, 0, 2, 0, 0, 1, 0, 3, 1, 1, 1, 1},
                     b1 = {10, 20, 30, 40}, b2 = {-1, -2, -3, -4};
  gpu->upload(a, av.data(), 24);
  gpu->upload(shifted, av.data(), 24);
  gpu->upload(b, bv.data(), 48);
  gpu->upload(bias1, b1.data(), 16);
  gpu->upload(bias2, b2.data(), 16);
  KernelAttrs attrs;
  attrs.set("transA", false);
  attrs.set("transB", false);
  attrs.set("alpha", 1.0);
  attrs.set("beta", 1.0);
  KernelContext context{0, 0, 0, 0};
  // A B = [[4, 5, 5, 9], [10, 11, 14, 21]].
  std::vector<float> product = {4, 5, 5, 9, 10, 11, 14, 21};
  auto gemm = [&](const float *left, const float *bias) {
    KernelCall call{bias ? "gemm" : "matmul", {}, {}, attrs, context};
    call.in = {{const_cast<float *>(left), DType::F32, {2, 3}},
               {b, DType::F32, {3, 4}}};
    if (bias)
      call.in.push_back({const_cast<float *>(bias), DType::F32, {4}});
    call.out = {{y, DType::F32, {2, 4}}};
    gpu->launch(call);
    std::vector<float> out(8);
    gpu->download(out.data(), y, 32);
    return out;
  };
  auto plus = [&](const std::vector<float> &bias) {
    std::vector<float> out = product;
    for (size_t i = 0; i < out.size(); ++i)
      out[i] += bias[i % 4];
    return out;
  };
  QueriesSince since;
  EXPECT_EQ(gemm(a, nullptr), product);
  EXPECT_EQ(since(), 1);
  EXPECT_EQ(gemm(a, nullptr), product);
  EXPECT_EQ(since(), 0) << "the same configuration asked again";
  EXPECT_EQ(gemm(shifted, nullptr), product);
  EXPECT_EQ(since(), 1) << "A 4-byte aligned is another configuration";
  EXPECT_EQ(gemm(a, bias1), plus(b1));
  EXPECT_EQ(since(), 1) << "the bias epilogue is another configuration";
  EXPECT_EQ(gemm(a, bias2), plus(b2)) << "the kept plan's bias is this call's";
  EXPECT_EQ(since(), 0);
  gpu->freeArena(arena);
}

#ifdef WEFT_HAVE_CUDNN
/// The emulator's cuDNN: cross-correlation over NCHW, a window that does
/// not give the output's dims refused, and batch norm's running variance
/// the unbiased one.
TEST(CudaEmulator, CudnnKeepsItsContract) {
  const cuda::Cudnn &dnn = cuda::Cudnn::get();
  auto tensor = [&](std::vector<int> dims) {
    cudnnTensorDescriptor_t d;
    std::vector<int> strides(dims.size(), 1);
    for (size_t k = dims.size() - 1; k-- > 0;)
      strides[k] = strides[k + 1] * dims[k + 1];
    dnn.cudnnCreateTensorDescriptor(&d);
    dnn.cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, int(dims.size()),
                                   dims.data(), strides.data());
    return d;
  };
  cudnnTensorDescriptor_t xd = tensor({1, 1, 3, 3}), yd = tensor({1, 1, 2, 2}),
                          bad = tensor({1, 1, 3, 3});
  cudnnFilterDescriptor_t wd;
  int filter[4] = {1, 1, 2, 2}, pad[2] = {0, 0}, one[2] = {1, 1};
  dnn.cudnnCreateFilterDescriptor(&wd);
  dnn.cudnnSetFilterNdDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4,
                                 filter);
  cudnnConvolutionDescriptor_t cd;
  dnn.cudnnCreateConvolutionDescriptor(&cd);
  dnn.cudnnSetConvolutionNdDescriptor(
      cd, 2, pad, one, one, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 0, 0, 1}, y(9);
  float alpha = 1, beta = 0;
  auto forward = [&](cudnnTensorDescriptor_t out) {
    return dnn.cudnnConvolutionForward(nullptr, &alpha, xd, x.data(), wd,
                                       w.data(), cd,
                                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                       nullptr, 0, &beta, out, y.data());
  };
  ASSERT_EQ(forward(yd), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 4),
            (std::vector<float>{6, 8, 12, 14}));   // x[i][j] + x[i+1][j+1]
  EXPECT_EQ(forward(bad), CUDNN_STATUS_BAD_PARAM); // 3x3 out of a 2x2 window
  // Batch norm over [2, 1, 1, 2] = 1..4: mean 2.5, variance 1.25 (biased),
  // 5/3 unbiased; factor 0.5 from running (0, 1).
  cudnnTensorDescriptor_t bx = tensor({2, 1, 1, 2}), bs;
  dnn.cudnnCreateTensorDescriptor(&bs);
  ASSERT_EQ(dnn.cudnnDeriveBNTensorDescriptor(bs, bx, CUDNN_BATCHNORM_SPATIAL),
            CUDNN_STATUS_SUCCESS);
  std::vector<float> bxv = {1, 2, 3, 4}, by(4), g = {1}, b = {0}, mean = {0},
                     var = {1}, saved(2);
  ASSERT_EQ(dnn.cudnnBatchNormalizationForwardTraining(
                nullptr, CUDNN_BATCHNORM_SPATIAL, &alpha, &beta, bx, bxv.data(),
                bx, by.data(), bs, g.data(), b.data(), 0.5, mean.data(),
                var.data(), 1e-5, &saved[0], &saved[1]),
            CUDNN_STATUS_SUCCESS);
  EXPECT_FLOAT_EQ(mean[0], 1.25f);
  EXPECT_FLOAT_EQ(var[0], 0.5f + 0.5f * 5.0f / 3.0f);
  EXPECT_FLOAT_EQ(saved[1], float(1 / std::sqrt(1.25 + 1e-5)));
  EXPECT_FLOAT_EQ(by[0], float(-1.5 / std::sqrt(1.25 + 1e-5)));
  for (cudnnTensorDescriptor_t d : {xd, yd, bad, bx, bs})
    dnn.cudnnDestroyTensorDescriptor(d);
  dnn.cudnnDestroyFilterDescriptor(wd);
  dnn.cudnnDestroyConvolutionDescriptor(cd);
}

/// The backend ranks cuDNN's algorithms once per convolution configuration
/// and pass (Convolution.cpp): a repeated conv reuses its plan with this
/// call's bias; another pass is another configuration.
TEST(CudaEmulator, ConvPlansRankTheAlgorithmsOncePerConfiguration) {
  auto gpu = createCudaBackend(0);
  float *arena = static_cast<float *>(gpu->allocateArena(64 * 5));
  float *x = arena, *w = arena + 16, *bias = arena + 32, *y = arena + 48,
        *dw = arena + 64;
  std::vector<float> xv = {1, 2, 3, 4, 5, 6, 7, 8, 9}, wv = {1, 0, 0, 1};
  gpu->upload(x, xv.data(), 36);
  gpu->upload(w, wv.data(), 16);
  KernelAttrs attrs;
  attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  attrs.set("strides", std::vector<int64_t>{1, 1});
  attrs.set("dilations", std::vector<int64_t>{1, 1});
  attrs.set("group", int64_t(1));
  KernelContext context{0, 0, 0, 0};
  Tensor xt{x, DType::F32, {1, 1, 3, 3}}, wt{w, DType::F32, {1, 1, 2, 2}},
      yt{y, DType::F32, {1, 1, 2, 2}};
  auto conv = [&](float b) {
    gpu->upload(bias, &b, 4);
    KernelCall call{
        "conv", {xt, wt, {bias, DType::F32, {1}}}, {yt}, attrs, context};
    gpu->launch(call);
    std::vector<float> out(4);
    gpu->download(out.data(), y, 16);
    return out;
  };
  QueriesSince since;
  // x[i][j] + x[i+1][j+1], plus the bias.
  EXPECT_EQ(conv(100), (std::vector<float>{106, 108, 112, 114}));
  EXPECT_EQ(since(), 1);
  EXPECT_EQ(conv(-6), (std::vector<float>{0, 2, 6, 8}))
      << "the kept plan adds this call's bias";
  EXPECT_EQ(since(), 0) << "the same configuration ranked again";
  KernelCall grad{"conv_weight_grad",
                  {xt, yt},
                  {{dw, DType::F32, {1, 1, 2, 2}}},
                  attrs,
                  context};
  gpu->launch(grad);
  std::vector<float> dwv(4);
  gpu->download(dwv.data(), dw, 16);
  // dy = [0, 2, 6, 8]: dw[p][q] = sum x[i+p][j+q] dy[i][j].
  EXPECT_EQ(dwv, (std::vector<float>{68, 84, 116, 132}));
  EXPECT_EQ(since(), 1) << "backward filter is another pass";
  gpu->freeArena(arena);
}
#endif

/// TF32 as tensor cores read f32: 10 mantissa bits, nearest, ties away.
TEST(CudaEmulator, RoundsToTf32AsTensorCoresRead) {
  using cuda::emulator::roundToTf32;
  EXPECT_EQ(roundToTf32(1 + 0x1p-12f), 1.0f);
  EXPECT_EQ(roundToTf32(1 + 0x1p-11f), 1 + 0x1p-10f); // a tie: away
  EXPECT_EQ(roundToTf32(-(1 + 0x1p-11f)), -(1 + 0x1p-10f));
  EXPECT_EQ(roundToTf32(1 + 0x1p-10f), 1 + 0x1p-10f); // TF32 already
  EXPECT_TRUE(std::isnan(roundToTf32(NAN)));
}

/// weft-run --allow-tf32: the backend's f32 GEMMs and convolutions
/// multiply TF32-rounded operands (CUBLAS_COMPUTE_32F_FAST_TF32, cuDNN's
/// default math); without it, f32 ones.
TEST(CudaEmulator, AllowTf32RoundsF32ProductsOperands) {
  // 1 + 2^-12 is not a TF32 value: x 3 is 3 + 3 2^-12 in f32, 3 in TF32.
  float x = 1 + 0x1p-12f, three = 3;
  for (bool tf32 : {false, true}) {
    auto gpu = createCudaBackend(0, tf32);
    float *arena = static_cast<float *>(gpu->allocateArena(256));
    gpu->upload(arena, &x, 4);
    gpu->upload(arena + 16, &three, 4);
    float want = tf32 ? 3.0f : 3 * x, got = 0;
    KernelAttrs none;
    KernelContext context{0, 0, 0, 0};
    KernelCall matmul{
        "matmul",
        {{arena, DType::F32, {1, 1}}, {arena + 16, DType::F32, {1, 1}}},
        {{arena + 32, DType::F32, {1, 1}}},
        none,
        context};
    gpu->launch(matmul);
    gpu->download(&got, arena + 32, 4);
    EXPECT_EQ(got, want) << "matmul, tf32 " << tf32;
#ifdef WEFT_HAVE_CUDNN
    KernelAttrs attrs;
    attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
    attrs.set("strides", std::vector<int64_t>{1, 1});
    attrs.set("dilations", std::vector<int64_t>{1, 1});
    attrs.set("group", int64_t(1));
    KernelCall conv{"conv",
                    {{arena, DType::F32, {1, 1, 1, 1}},
                     {arena + 16, DType::F32, {1, 1, 1, 1}}},
                    {{arena + 48, DType::F32, {1, 1, 1, 1}}},
                    attrs,
                    context};
    gpu->launch(conv);
    gpu->download(&got, arena + 48, 4);
    EXPECT_EQ(got, want) << "conv, tf32 " << tf32;
#endif
    gpu->freeArena(arena);
  }
}

/// Strided views coalesce: operands of the output's shape become one dim,
/// a row broadcast two, size-1 dims go, a head transpose keeps its four.
TEST(CudaEmulator, StridedViewsCoalesceTheirDims) {
  KernelAttrs none;
  KernelContext context{0, 0, 0, 0};
  KernelCall call{"add", {}, {}, none, context};
  auto same = cuda::Strided<2>::of(call, {2, 3, 4}, {{{12, 4, 1}, {12, 4, 1}}});
  EXPECT_EQ(same.rank, 1);
  EXPECT_EQ(same.dims[0], 24);
  auto bias = cuda::Strided<2>::of(call, {6, 1, 4}, {{{4, 4, 1}, {0, 0, 1}}});
  EXPECT_EQ(bias.rank, 2);
  auto heads = cuda::Strided<1>::of(call, {8, 16, 32, 64},
                                    {{{32 * 16 * 64, 64, 16 * 64, 1}}});
  EXPECT_EQ(heads.rank, 4);
  EXPECT_TRUE(heads.narrow);
}

/// A coalesced view reads what the uncoalesced one reads, element by
/// element, over random shapes, strides (broadcasts included) and bases,
/// in 32-bit and 64-bit indexing.
TEST(CudaEmulator, StridedViewsReadWhatTheirDimsSay) {
  KernelAttrs none;
  KernelContext context{0, 0, 0, 0};
  KernelCall call{"where", {}, {}, none, context};
  std::mt19937 random(7);
  auto pick = [&](int below) { return int(random() % below); };
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> dims(1 + pick(5));
    for (int64_t &d : dims)
      d = 1 + pick(4);
    std::array<std::vector<int64_t>, 3> strides;
    std::array<int64_t, 3> base;
    for (int k = 0; k < 3; ++k) {
      // Contiguous, broadcast, transposed or arbitrary, by operand.
      int64_t step = 1;
      strides[k].assign(dims.size(), 0);
      for (size_t d = dims.size(); d-- > 0;) {
        int kind = pick(4);
        strides[k][d] = kind == 0 ? step : kind == 1 ? 0 : 1 + pick(40);
        step *= dims[d];
      }
      base[k] = pick(10);
    }
    auto view = cuda::Strided<3>::of(call, dims, strides, base);
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    for (bool narrow : {true, false}) {
      view.narrow = narrow;
      for (int64_t i = 0; i < n; ++i) {
        int64_t got[3];
        view.offsets(i, got);
        for (int k = 0; k < 3; ++k) {
          int64_t want = base[k], rest = i;
          for (size_t d = dims.size(); d-- > 0;) {
            want += rest % dims[d] * strides[k][d];
            rest /= dims[d];
          }
          ASSERT_EQ(got[k], want) << "trial " << trial << " element " << i;
        }
      }
    }
  }
}

/// DeviceWork sums the host time of the outermost guards only: a kernel
/// run inside a library call is not counted twice, so the sum never
/// exceeds the wall time around it.
TEST(CudaEmulator, DeviceWorkCountsNestedWorkOnce) {
  using clock = std::chrono::steady_clock;
  cuda::emulator::DeviceTotals before = cuda::emulator::deviceTotals();
  auto start = clock::now();
  {
    cuda::emulator::DeviceWork library(cuda::emulator::DeviceWork::Library);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    cuda::emulator::DeviceWork kernel(cuda::emulator::DeviceWork::Kernel);
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
  }
  double wall = std::chrono::duration<double>(clock::now() - start).count();
  cuda::emulator::DeviceTotals after = cuda::emulator::deviceTotals();
  EXPECT_GE(after.seconds - before.seconds, 0.05);
  EXPECT_LE(after.seconds - before.seconds, wall);
  EXPECT_EQ(after.kernelLaunches - before.kernelLaunches, 1);
  EXPECT_EQ(after.libraryCalls - before.libraryCalls, 1);
}

/// A bad index reaches the host through the backend's fault record: the
/// backend throws at its next synchronisation, naming the instruction.
TEST(CudaEmulator, AnIndexOutOfRangeFailsTheStep) {
  auto gpu = createCudaBackend(0);
  float *table = static_cast<float *>(gpu->allocateArena(4 * 3 * 4 + 64));
  auto *ids = reinterpret_cast<int64_t *>(table + 12);
  int64_t bad[2] = {1, 7};
  gpu->upload(ids, bad, sizeof bad);
  KernelAttrs attrs;
  attrs.set("axis", int64_t(0));
  KernelContext context{0, 0, 0, 42}; // instruction 42
  KernelCall call{"gather", {}, {}, attrs, context};
  call.in = {{table, DType::F32, {4, 3}}, {ids, DType::I64, {2}}};
  call.out = {{table + 6, DType::F32, {2, 3}}};
  gpu->launch(call);
  try {
    gpu->synchronize();
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "instruction 42: index 7 out of range [-4, 4) (found on cuda:0)");
  }
  gpu->synchronize(); // reported once
  gpu->freeArena(table);
}

/// Every kernel the CPU has runs in the emulator, but attention (cuDNN's
/// frontend graphs), and cuDNN's where the build found no cuDNN headers.
TEST(CudaEmulator, HasEveryKernelButAttention) {
  std::vector<std::string> lacking = {"attention", "attention_grad"};
#ifndef WEFT_HAVE_CUDNN
  lacking.insert(lacking.end(), {"batch_norm", "batch_norm_grad", "conv",
                                 "conv_transpose", "conv_weight_grad"});
#endif
  EXPECT_EQ(conformance::cpuKernelsCudaLacks(), lacking);
}

} // namespace
