//===- GemmPlan.cpp - a GEMM's cuBLASLt descriptors and algorithm ---------===//
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt
// gets B's buffer as its A and A's as its B, with m and n swapped. Every
// dtype accumulates in f32 (CUBLAS_COMPUTE_32F; bf16 and f16 operands,
// f32 scale; f32 operands on TF32 tensor cores, CUBLAS_COMPUTE_32F_FAST_TF32,
// under weft-run --allow-tf32). The heuristic is told each operand's alignment
// (a plan's 64 bytes, a view's less), not left to assume cuBLASLt's default
// 256, so the alignments are part of the configuration a plan is kept for. The
// epilogue's vectors (bias, bias gradient, GELU input) are this call's:
// they are set on the kept descriptor before each matmul.
//
//===----------------------------------------------------------------------===//

#include "GemmPlan.h"

#include "CublasLt.h"
#include "CudaCheck.h"

namespace weft::rt::cuda {

namespace {

cudaDataType_t dataType(const KernelCall &call, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDA_R_32F;
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  default:
    unsupported(call, dtype);
  }
}

/// The largest power of two up to 256 dividing `p`'s address (256 for
/// null: no vector, no constraint). cuBLASLt's heuristic assumes 256-byte
/// aligned operands unless told otherwise
/// (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES), and the plan aligns
/// buffers to 64 bytes only, views within them less: told each pointer's
/// alignment, it offers only algorithms that can use it.
uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 1;
  while (alignment < 256 && address % (2 * alignment) == 0)
    alignment *= 2;
  return alignment;
}

GemmKey keyOf(const Gemm &g, const Context &ctx, const void *a, const void *b,
              const void *c) {
  return {g.dtype,
          ctx.tf32 && g.dtype == DType::F32,
          g.transA,
          g.transB,
          g.m,
          g.n,
          g.k,
          g.lda,
          g.ldb,
          g.ldc,
          g.batch,
          g.strideA,
          g.strideB,
          g.strideC,
          g.gelu,
          g.bias != nullptr,
          g.biasGrad != nullptr,
          g.biasGradOfB,
          alignmentOf(a),
          alignmentOf(b),
          alignmentOf(c),
          alignmentOf(g.bias ? g.bias : g.biasGrad),
          alignmentOf(g.aux)};
}

} // namespace

/// One configuration's descriptors and the algorithm the heuristic chose
/// for them, destroyed with the cache.
struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  GemmPlan() = default;
  GemmPlan(const GemmPlan &) = delete;
  GemmPlan &operator=(const GemmPlan &) = delete;
  ~GemmPlan() {
    const CublasLt &lt = CublasLt::get();
    lt.cublasLtMatrixLayoutDestroy(c);
    lt.cublasLtMatrixLayoutDestroy(b);
    lt.cublasLtMatrixLayoutDestroy(a);
    lt.cublasLtMatmulDescDestroy(op);
  }

  /// Points the epilogue at this call's vectors: the bias (or the bias
  /// gradient's sums) and the GELU's input.
  void setVectors(const Gemm &g) const {
    const CublasLt &lt = CublasLt::get();
    if (const void *vector = g.bias ? g.bias : g.biasGrad)
      WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
          op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof vector));
    if (g.gelu != Gelu::None)
      WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
          op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof g.aux));
  }
};

GemmPlans::GemmPlans() = default;
GemmPlans::~GemmPlans() = default;

const GemmPlan *GemmPlans::find(const GemmKey &key) const {
  auto it = plans.find(key);
  return it == plans.end() ? nullptr : it->second.get();
}

const GemmPlan *GemmPlans::keep(const GemmKey &key,
                                std::unique_ptr<GemmPlan> plan) {
  return plans.emplace(key, std::move(plan)).first->second.get();
}

namespace {

/// The descriptors of `g` (with `key`'s alignments) and the algorithm
/// cuBLASLt's heuristic chooses for them; null when it has none.
std::unique_ptr<GemmPlan> makePlan(const KernelCall &call, const Context &ctx,
                                   const Gemm &g, const GemmKey &key) {
  cudaDataType_t type = dataType(call, g.dtype);
  const CublasLt &lt = CublasLt::get();
  auto plan = std::make_unique<GemmPlan>();
  WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescCreate(
      &plan->op, key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
      CUDA_R_32F));
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto &value) {
    WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(plan->op, attribute,
                                                        &value, sizeof value));
  };
  // Column-major: cuBLASLt's A is our B, its B our A.
  set(CUBLASLT_MATMUL_DESC_TRANSA, g.transB ? CUBLAS_OP_T : CUBLAS_OP_N);
  set(CUBLASLT_MATMUL_DESC_TRANSB, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N);
  // Column-major D is n x m: the bias runs along its n rows, as cuBLASLt's
  // bias vector does. Our op(A) is cuBLASLt's op(B): its sums over k, one
  // per column of the column-major n x m output, i.e. per row of ours;
  // our op(B) is its op(A), one sum per row of that output (per column of
  // ours).
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (g.gelu == Gelu::Forward)
    epilogue =
        g.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  else if (g.gelu == Gelu::Backward)
    epilogue = CUBLASLT_EPILOGUE_DGELU;
  else if (g.bias)
    epilogue = CUBLASLT_EPILOGUE_BIAS;
  else if (g.biasGrad)
    epilogue =
        g.biasGradOfB ? CUBLASLT_EPILOGUE_BGRADA : CUBLASLT_EPILOGUE_BGRADB;
  if (epilogue != CUBLASLT_EPILOGUE_DEFAULT)
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue);
  if (g.gelu != Gelu::None)
    set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, g.ldc);
  plan->setVectors(g);
  // Stored (before op) column-major shapes: our B is [k, n] row-major,
  // i.e. n x k column-major (k x n when transposed), and so on.
  WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutCreate(
      &plan->a, type, g.transB ? g.k : g.n, g.transB ? g.n : g.k, g.ldb));
  WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutCreate(
      &plan->b, type, g.transA ? g.m : g.k, g.transA ? g.k : g.m, g.lda));
  WEFT_CUBLAS_CHECK(
      lt.cublasLtMatrixLayoutCreate(&plan->c, type, g.n, g.m, g.ldc));
  if (g.batch > 1) {
    int32_t count = int32_t(g.batch);
    for (auto [layout, stride] : {std::pair{plan->a, g.strideB},
                                  {plan->b, g.strideA},
                                  {plan->c, g.strideC}}) {
      WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
          sizeof stride));
    }
  }
  // The preference only steers the heuristic: made and freed here.
  cublasLtMatmulPreference_t preference = nullptr;
  WEFT_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceCreate(&preference));
  std::unique_ptr<void, void (*)(void *)> freePreference(
      preference, [](void *p) {
        CublasLt::get().cublasLtMatmulPreferenceDestroy(
            static_cast<cublasLtMatmulPreference_t>(p));
      });
  WEFT_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx.workspaceBytes,
      sizeof ctx.workspaceBytes));
  // cuBLASLt's A is our B, its B our A; C is D.
  for (auto [attribute, alignment] :
       {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.alignB},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.alignA},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.alignC},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.alignC}})
    WEFT_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceSetAttribute(
        preference, attribute, &alignment, sizeof alignment));
  cublasLtMatmulHeuristicResult_t best;
  int found = 0;
  cublasStatus_t status = lt.cublasLtMatmulAlgoGetHeuristic(
      ctx.lt, plan->op, plan->a, plan->b, plan->c, plan->c, preference, 1,
      &best, &found);
  // No algorithm: none found, or (cuBLASLt's documented answer) no
  // heuristic for this configuration, as for an epilogue it lacks. With
  // an epilogue any refusal counts as none: the caller falls back to the
  // plain GEMM, which reports a real error itself.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED ||
      (status == CUBLAS_STATUS_SUCCESS && found == 0) ||
      (epilogue != CUBLASLT_EPILOGUE_DEFAULT &&
       status != CUBLAS_STATUS_SUCCESS))
    return nullptr;
  cublasCheck(status, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
  plan->algo = best.algo;
  return plan;
}

} // namespace

void Gemm::run(const KernelCall &call, const Context &ctx, const void *a,
               const void *b, void *c) const {
  if (!tryRun(call, ctx, a, b, c))
    call.fail("cuBLASLt has no algorithm for this GEMM");
}

bool Gemm::tryRun(const KernelCall &call, const Context &ctx, const void *a,
                  const void *b, void *c) const {
  if (m == 0 || n == 0)
    return true;
  GemmKey key = keyOf(*this, ctx, a, b, c);
  const GemmPlan *plan = ctx.gemmPlans->find(key);
  if (plan)
    plan->setVectors(*this);
  else if (auto made = makePlan(call, ctx, *this, key))
    plan = ctx.gemmPlans->keep(key, std::move(made));
  else
    return false;
  // cuBLASLt's A is our B, its B our A; C is D.
  WEFT_CUBLAS_CHECK(CublasLt::get().cublasLtMatmul(
      ctx.lt, plan->op, &alpha, b, plan->a, a, plan->b, &beta, c, plan->c, c,
      plan->c, &plan->algo, ctx.workspace, ctx.workspaceBytes, ctx.stream));
  return true;
}

} // namespace weft::rt::cuda
