//===- Gemm.cpp - matmul and gemm through cuBLASLt ------------------------===//
//
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt
// gets B's buffer as its A and A's as its B, with m and n swapped. Every
// dtype accumulates in f32 (CUBLAS_COMPUTE_32F; bf16 and f16 operands,
// f32 scale), as the CPU backend's widened GEMM does. The heuristic is
// told each operand's alignment (a plan's 64 bytes, a view's less), not
// left to assume cuBLASLt's default 256. Batched matmul with
// equal batch dims is one strided-batched call; a shared right operand (a
// weight) folds the batch into M; other broadcasts loop over the batch.
// A gemm's C that is one bias per column (weft-fold-linear-bias) is added
// in cuBLASLt's epilogue (CUBLASLT_EPILOGUE_BIAS: in f32, before the one
// rounding of the output), any other C broadcast into the output first.
// wgrad_bias's GEMM, dY^T X, sums the bias gradient from the dY it reads
// in the epilogue (CUBLASLT_EPILOGUE_BGRADB: our A is cuBLASLt's B, the
// sums run over the GEMM's k, one per column of its n x m output; for the
// transposed X^T dY, dY is our B and cuBLASLt's A: BGRADA, one sum per
// row of its output). gemm_gelu_tanh applies the tanh GELU in the
// epilogue and stores its input beside (CUBLASLT_EPILOGUE_GELU_AUX,
// _BIAS), gemm_gelu_tanh_grad multiplies by its derivative at that input
// (CUBLASLT_EPILOGUE_DGELU); the auxiliary matrix has the output's layout.
// Those two take the epilogue for 16-bit outputs whose rows are a multiple
// of 8 (the auxiliary leading dimension's rule). Otherwise, or where the
// heuristic has no algorithm for the epilogue, each runs the kernels it
// fuses (Fused.h), as the CPU does.
//
//===----------------------------------------------------------------------===//

#include "CublasLt.h"
#include "CudaCheck.h"
#include "CudaKernels.h"

#include "../../kernels/Fused.h"
#include "../../kernels/MatmulShape.h"

#include <cuda_runtime.h>

#include <algorithm>

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

/// The largest power of two up to 256 dividing `p`'s address. cuBLASLt's
/// heuristic assumes 256-byte aligned operands unless told otherwise
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

/// The descriptors of one call, destroyed with it.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~Descriptors() {
    const CublasLt &lt = CublasLt::get();
    lt.cublasLtMatmulPreferenceDestroy(preference);
    lt.cublasLtMatrixLayoutDestroy(c);
    lt.cublasLtMatrixLayoutDestroy(b);
    lt.cublasLtMatrixLayoutDestroy(a);
    lt.cublasLtMatmulDescDestroy(op);
  }
};

/// The tanh GELU cuBLASLt applies in the epilogue: its value, storing its
/// input in the auxiliary matrix, or its derivative at the auxiliary
/// matrix times the product.
enum class Gelu { None, Forward, Backward };

/// One row-major GEMM (batched: `batch` of them `stride*` elements
/// apart): C = alpha op(A) op(B) + beta C.
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

  void run(const KernelCall &call, const Context &ctx, const void *a,
           const void *b, void *c) const {
    if (!tryRun(call, ctx, a, b, c))
      call.fail("cuBLASLt has no algorithm for this GEMM");
  }

  /// Runs the GEMM; false, having run nothing, when cuBLASLt's heuristic
  /// offers no algorithm (an epilogue narrows its choice).
  bool tryRun(const KernelCall &call, const Context &ctx, const void *a,
              const void *b, void *c) const {
    if (m == 0 || n == 0)
      return true;
    cudaDataType_t type = dataType(call, dtype);
    const CublasLt &lt = CublasLt::get();
    Descriptors d;
    WEFT_CUBLAS_CHECK(
        lt.cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // Column-major: cuBLASLt's A is our B, its B our A.
    cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                      opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
        d.op, CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA));
    WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
        d.op, CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB));
    auto epilogue = [&](cublasLtEpilogue_t kind, const void *vector) {
      WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
          d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &kind, sizeof kind));
      WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
          d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof vector));
    };
    // Column-major D is n x m: the bias runs along its n rows, as
    // cuBLASLt's bias vector does.
    if (gelu == Gelu::Forward)
      epilogue(bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
                    : CUBLASLT_EPILOGUE_GELU_AUX,
               bias);
    else if (gelu == Gelu::Backward)
      epilogue(CUBLASLT_EPILOGUE_DGELU, nullptr);
    else if (bias)
      epilogue(CUBLASLT_EPILOGUE_BIAS, bias);
    if (gelu != Gelu::None) {
      int64_t ld = ldc;
      WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
          d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof aux));
      WEFT_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
          d.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
    }
    // Our op(A) is cuBLASLt's op(B): its sums over k, one per column of the
    // column-major n x m output, i.e. per row of ours; our op(B) is its
    // op(A), one sum per row of that output (per column of ours).
    if (biasGrad)
      epilogue(biasGradOfB ? CUBLASLT_EPILOGUE_BGRADA
                           : CUBLASLT_EPILOGUE_BGRADB,
               biasGrad);
    // Stored (before op) column-major shapes: our B is [k, n] row-major,
    // i.e. n x k column-major (k x n when transposed), and so on.
    WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutCreate(&d.a, type, transB ? k : n,
                                                    transB ? n : k, ldb));
    WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutCreate(&d.b, type, transA ? m : k,
                                                    transA ? k : m, lda));
    WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutCreate(&d.c, type, n, m, ldc));
    if (batch > 1) {
      int32_t count = int32_t(batch);
      for (auto [layout, stride] :
           {std::pair{d.a, strideB}, {d.b, strideA}, {d.c, strideC}}) {
        WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
        WEFT_CUBLAS_CHECK(lt.cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
            sizeof stride));
      }
    }
    WEFT_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceCreate(&d.preference));
    WEFT_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceSetAttribute(
        d.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
        &ctx.workspaceBytes, sizeof ctx.workspaceBytes));
    // cuBLASLt's A is our B, its B our A; C is D.
    for (auto [attribute, pointer] :
         {std::pair{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, b},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, a},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, (const void *)c},
          {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, (const void *)c}}) {
      uint32_t alignment = alignmentOf(pointer);
      WEFT_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceSetAttribute(
          d.preference, attribute, &alignment, sizeof alignment));
    }
    cublasLtMatmulHeuristicResult_t best;
    int found = 0;
    cublasStatus_t status = lt.cublasLtMatmulAlgoGetHeuristic(
        ctx.lt, d.op, d.a, d.b, d.c, d.c, d.preference, 1, &best, &found);
    // No algorithm: none found, or (cuBLASLt's documented answer) no
    // heuristic for this configuration, as for an epilogue it lacks. With
    // an epilogue any refusal counts as none: the caller falls back to the
    // plain GEMM, which reports a real error itself.
    bool epilogueSet = bias || biasGrad || gelu != Gelu::None;
    if (status == CUBLAS_STATUS_NOT_SUPPORTED ||
        (status == CUBLAS_STATUS_SUCCESS && found == 0) ||
        (epilogueSet && status != CUBLAS_STATUS_SUCCESS))
      return false;
    cublasCheck(status, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
    WEFT_CUBLAS_CHECK(lt.cublasLtMatmul(
        ctx.lt, d.op, &alpha, b, d.a, a, d.b, &beta, c, d.c, c, d.c, &best.algo,
        ctx.workspace, ctx.workspaceBytes, ctx.stream));
    return true;
  }
};

void matmul(const KernelCall &call, const Context &ctx) {
  const Tensor &lhs = call.in[0], &rhs = call.in[1], &y = call.out[0];
  MatmulShape s = MatmulShape::of(lhs, rhs);
  Gemm g{lhs.dtype};
  g.m = s.m;
  g.n = s.n;
  g.k = s.k;
  g.lda = g.k;
  g.ldb = g.n;
  g.ldc = g.n;
  if (s.foldsIntoM()) {
    g.m *= s.batchCount(); // [..., M, K] x [K, N]: one GEMM
    return g.run(call, ctx, lhs.data, rhs.data, y.data);
  }
  if (s.batchA == s.batch && s.batchB == s.batch) {
    g.batch = s.batchCount();
    g.strideA = g.m * g.k;
    g.strideB = g.k * g.n;
    g.strideC = g.m * g.n;
    return g.run(call, ctx, lhs.data, rhs.data, y.data);
  }
  std::array<std::vector<int64_t>, 2> strides = {
      broadcastStrides(s.batchA, s.batch), broadcastStrides(s.batchB, s.batch)};
  int64_t elem = dtypeSize(lhs.dtype);
  int64_t matA = g.m * g.k * elem, matB = g.k * g.n * elem,
          matC = g.m * g.n * elem;
  forEachBroadcast<2>(s.batch, strides, [&](int64_t o, const auto &off) {
    g.run(call, ctx, lhs.as<char>() + off[0] * matA,
          rhs.as<char>() + off[1] * matB, y.as<char>() + o * matC);
  });
}

/// Whether the gemm's C is one value per column added once (beta 1): a
/// Linear layer's bias, for the epilogue.
bool isColumnBias(const KernelCall &call, const Tensor &y) {
  if (call.in.size() < 3 || call.f("beta") != 1.0)
    return false;
  const Tensor &c = call.in[2];
  return c.dtype == y.dtype && c.numel() == y.shape[1] &&
         (c.rank() == 1 || (c.rank() == 2 && c.shape[0] == 1));
}

/// ONNX Gemm: Y = alpha op(A) op(B) + beta C: a column bias in the
/// epilogue, another C broadcast into Y first.
/// The GEMM of a gemm-like call (A, B, ...) -> (Y [m, n], ...), without C.
Gemm gemmOf(const KernelCall &call, const Tensor &y) {
  const Tensor &a = call.in[0], &b = call.in[1];
  Gemm g{a.dtype, call.b("transA"), call.b("transB")};
  g.m = y.shape[0];
  g.n = y.shape[1];
  g.k = g.transA ? a.shape[0] : a.shape[1];
  g.lda = a.shape[1];
  g.ldb = b.shape[1];
  g.ldc = g.n;
  g.alpha = float(call.f("alpha"));
  return g;
}

void gemm(const KernelCall &call, const Context &ctx) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  Gemm g = gemmOf(call, y);
  if (isColumnBias(call, y)) {
    g.bias = call.in[2].data;
    if (g.tryRun(call, ctx, a.data, b.data, y.data))
      return;
    g.bias = nullptr; // no algorithm with the epilogue: C as any other
  }
  if (call.in.size() > 2) {
    broadcastInto(call, ctx, call.in[2], y);
    g.beta = float(call.f("beta"));
  }
  g.run(call, ctx, a.data, b.data, y.data);
}

/// A fused kernel whose epilogue cuBLASLt has no algorithm for: the
/// kernels it fuses, as the CPU runs them (Fused.h).
void runParts(const KernelCall &call, const Context &ctx) {
  fusedKernels().at(call.kernel)(call, [&](const KernelCall &part) {
    kernelTable().at(part.kernel)(part, ctx);
  });
}

/// wgrad_bias with the sums to accumulate into (the outputs are their
/// bytes, weft-fold-grad-accumulation): the GEMM with beta 1 over its
/// output (Megatron's gradient_accumulation_fusion, rounded once), and the
/// bias gradient from the epilogue's sums in scratch, added after by the
/// add kernel; where
/// cuBLASLt has no epilogue for it, the plain GEMM and dY's column sums.
void wgradBiasInto(const KernelCall &call, const Context &ctx, Gemm g,
                   const void *a, const void *b) {
  const Tensor &dy = call.in[0], &weight = call.out[0], &bias = call.out[1];
  if (weight.numel() == 0) // no GEMM to run its epilogue
    return addColumnSums(call, ctx, bias, dy);
  g.beta = 1;
  void *sums = ctx.scratch->get(size_t(bias.bytes()), ctx.stream);
  g.biasGrad = sums;
  if (g.tryRun(call, ctx, a, b, weight.data)) {
    // The epilogue's sums added by the add kernel, as unfused.
    Tensor addend{sums, bias.dtype, bias.shape};
    KernelCall add{"add", {bias, addend}, {bias}, KernelAttrs(), call.ctx};
    return kernelTable().at("add")(add, ctx);
  }
  g.biasGrad = nullptr;
  g.run(call, ctx, a, b, weight.data);
  addColumnSums(call, ctx, bias, dy);
}

/// wgrad_bias (dY [M, N], X [M, K], W_sum?, b_sum?) -> (dY^T X, or X^T dY
/// when transposed; dY's column sums), added into the sums when given.
void wgradBias(const KernelCall &call, const Context &ctx) {
  bool transposed = call.flag("transposed");
  // Our GEMM's A and B: gemm(dY, X) or gemm(X, dY), both {transA}.
  const Tensor &dy = call.in[0], &a = call.in[transposed ? 1 : 0],
               &b = call.in[transposed ? 0 : 1];
  Gemm g{dy.dtype, /*transA=*/true, /*transB=*/false};
  g.m = a.shape[1];
  g.n = b.shape[1];
  g.k = a.shape[0];
  g.lda = a.shape[1];
  g.ldb = b.shape[1];
  g.ldc = g.n;
  g.biasGradOfB = transposed;
  if (call.in.size() == 4)
    return wgradBiasInto(call, ctx, g, a.data, b.data);
  g.biasGrad = call.out[1].data;
  if (!g.tryRun(call, ctx, a.data, b.data, call.out[0].data))
    runParts(call, ctx);
}

/// Whether cuBLASLt's GELU epilogues may run on `y`: 16-bit (their
/// accuracy against f32's tolerance is unmeasured), rows a multiple of 8.
bool geluEpilogue(const Tensor &y) {
  return isHalf(y.dtype) && y.shape[1] % 8 == 0;
}

/// gemm_gelu_tanh (A, B, C?) -> (gelu_tanh(Y), Y).
void gemmGeluTanh(const KernelCall &call, const Context &ctx) {
  const Tensor &y = call.out[0], &pre = call.out[1];
  bool noC = call.in.size() < 3;
  if (geluEpilogue(y) && (noC || isColumnBias(call, y))) {
    Gemm g = gemmOf(call, y);
    g.gelu = Gelu::Forward;
    g.aux = pre.data;
    g.bias = noC ? nullptr : call.in[2].data;
    if (g.tryRun(call, ctx, call.in[0].data, call.in[1].data, y.data))
      return;
  }
  runParts(call, ctx);
}

/// gemm_gelu_tanh_grad (A, B, pre) -> gelu_tanh_grad(pre, gemm(A, B)).
void gemmGeluTanhGrad(const KernelCall &call, const Context &ctx) {
  const Tensor &pre = call.in[2], &dx = call.out[0];
  if (geluEpilogue(dx)) {
    Gemm g = gemmOf(call, dx);
    g.gelu = Gelu::Backward;
    g.aux = pre.data;
    if (g.tryRun(call, ctx, call.in[0].data, call.in[1].data, dx.data))
      return;
  }
  runParts(call, ctx);
}

} // namespace

void registerGemmKernels(KernelTable &t) {
  t["matmul"] = matmul;
  t["gemm"] = gemm;
  t["wgrad_bias"] = wgradBias;
  t["gemm_gelu_tanh"] = gemmGeluTanh;
  t["gemm_gelu_tanh_grad"] = gemmGeluTanhGrad;
}

} // namespace weft::rt::cuda
