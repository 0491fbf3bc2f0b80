//===- Gemm.cpp - matmul and gemm through cuBLASLt ------------------------===//
//
// The kernels as GEMMs (GemmPlan.h: cuBLASLt's descriptors and algorithm
// for each configuration, made once). Every dtype accumulates in f32, as
// the CPU backend's widened GEMM does. Batched matmul with
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

#include "GemmPlan.h"

#include "../../kernels/Fused.h"
#include "../../kernels/MatmulShape.h"

#include <array>
#include <vector>

namespace weft::rt::cuda {

namespace {

void matmul(const KernelCall &call, const Context &ctx) {
  const Tensor &lhs = call.in[0], &rhs = call.in[1], &y = call.out[0];
  MatmulShape s =
      MatmulShape::of(lhs, rhs, call.flag("transA"), call.flag("transB"));
  Gemm g{lhs.dtype, s.transA, s.transB};
  g.m = s.m;
  g.n = s.n;
  g.k = s.k;
  g.lda = s.lda();
  g.ldb = s.ldb();
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
  t[Op::MatMul] = matmul;
  t[Op::Gemm] = gemm;
  t[Op::WgradBias] = wgradBias;
  t[Op::GemmGeluTanh] = gemmGeluTanh;
  t[Op::GemmGeluTanhGrad] = gemmGeluTanhGrad;
}

} // namespace weft::rt::cuda
