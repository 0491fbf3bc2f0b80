//===- GemmPlan.h - one GEMM for cuBLASLt, its plans cached ----*- C++ -*-===//
//
// A row-major GEMM as the CUDA backend's kernels describe it (Gemm.cpp),
// and the cache of what cuBLASLt needs to run one: its matmul descriptor,
// matrix layouts and the algorithm its heuristic chose. cuBLASLt lets
// descriptors and an algorithm be reused for every GEMM of the same
// configuration (cublasLt.h: the algorithm is valid for the problem the
// heuristic was asked about), and the heuristic is the costly host call
// of a GEMM (RAFT memoises it and halves its GEMMs' launch latency), so a
// training step asks it once per configuration, the first step only.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_GEMMPLAN_H
#define WEFT_RUNTIME_BACKENDS_CUDA_GEMMPLAN_H

#include "CudaKernels.h"

#include <map>
#include <memory>
#include <tuple>

namespace weft::rt::cuda {

/// The tanh GELU cuBLASLt applies in the epilogue: its value, storing its
/// input in the auxiliary matrix, or its derivative at the auxiliary
/// matrix times the product.
enum class Gelu { None, Forward, Backward };

/// One row-major GEMM (batched: `batch` of them `stride*` elements
/// apart): C = alpha op(A) op(B) + beta C. Counts are elements.
struct Gemm {
  DType dtype;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, strideA = 0, strideB = 0, strideC = 0;
  float alpha = 1, beta = 0;
  /// One value per column of C, of C's dtype, added by the epilogue.
  const void *bias = nullptr;
  /// Where the epilogue writes op(A)'s sums over k (one per row of our C),
  /// or op(B)'s (one per column) when `biasGradOfB`, of C's dtype.
  void *biasGrad = nullptr;
  bool biasGradOfB = false;
  Gelu gelu = Gelu::None;
  /// The GELU's input, [m, n] like C: written (Forward) or read (Backward).
  const void *aux = nullptr;

  /// Enqueues the GEMM on ctx.stream; throws Error naming the kernel when
  /// cuBLASLt has no algorithm for it.
  void run(const KernelCall &call, const Context &ctx, const void *a,
           const void *b, void *c) const;
  /// Enqueues the GEMM; false, having enqueued nothing, when cuBLASLt's
  /// heuristic offers no algorithm (an epilogue narrows its choice).
  bool tryRun(const KernelCall &call, const Context &ctx, const void *a,
              const void *b, void *c) const;
};

/// What fixes a GEMM's descriptors and algorithm: everything but alpha,
/// beta and the operands' addresses, of which only the alignment (bytes,
/// a power of two up to 256) is told to the heuristic.
struct GemmKey {
  DType dtype;
  bool tf32; ///< f32 on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32)
  bool transA, transB;
  int64_t m, n, k, lda, ldb, ldc, batch, strideA, strideB, strideC;
  Gelu gelu;
  bool bias, biasGrad, biasGradOfB;
  uint32_t alignA, alignB, alignC, alignBias, alignAux;

  auto tie() const {
    return std::tie(dtype, tf32, transA, transB, m, n, k, lda, ldb, ldc, batch,
                    strideA, strideB, strideC, gelu, bias, biasGrad,
                    biasGradOfB, alignA, alignB, alignC, alignBias, alignAux);
  }
  bool operator<(const GemmKey &other) const { return tie() < other.tie(); }
};

struct GemmPlan;

/// The plans of one backend's GEMMs by configuration, each made by the
/// first GEMM of its configuration (the heuristic asked once) and freed
/// with the cache. A configuration the heuristic had no algorithm for is
/// not kept: the caller runs its fallback, and the next GEMM asks again.
class GemmPlans {
public:
  GemmPlans();
  ~GemmPlans();
  GemmPlans(const GemmPlans &) = delete;
  GemmPlans &operator=(const GemmPlans &) = delete;

  /// The plan of `key`, or null when none is kept.
  const GemmPlan *find(const GemmKey &key) const;
  /// Keeps `plan` for `key`; it.
  const GemmPlan *keep(const GemmKey &key, std::unique_ptr<GemmPlan> plan);

private:
  std::map<GemmKey, std::unique_ptr<GemmPlan>> plans;
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_GEMMPLAN_H
