//===- LinearAlgebra.cpp - matmul and gemm through BLAS -------------------===//
//
// GEMM is OpenBLAS's cblas_sgemm/dgemm. Batched matmul broadcasts batch dims
// as numpy does and loops over the batch; when the right operand has no batch
// dims (a weight), the batch folds into M for one large GEMM. transA/transB
// (weft's, not ONNX's) are BLAS's transposes.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Kernel.h"
#include "MatmulShape.h"

#include <cstring>
#include <vector>

namespace weft::rt {

namespace {

void matmul(const KernelCall &call) {
  const Tensor &lhs = call.in[0], &rhs = call.in[1], &y = call.out[0];
  MatmulShape s =
      MatmulShape::of(lhs, rhs, call.flag("transA"), call.flag("transB"));
  int64_t m = s.m, n = s.n, k = s.k;
  dispatchFloat(call, lhs.dtype, [&]<typename T>() {
    const T *pa = lhs.as<T>(), *pb = rhs.as<T>();
    T *pc = y.as<T>();
    if (s.foldsIntoM()) {
      // [..., M, K] x [K, N]: one GEMM with M' = batch * M.
      gemm<T>(false, s.transB, s.batchCount() * m, n, k, 1, pa, k, pb, s.ldb(),
              0, pc, n);
      return;
    }
    std::array<std::vector<int64_t>, 2> strides = {
        broadcastStrides(s.batchA, s.batch),
        broadcastStrides(s.batchB, s.batch)};
    int64_t matA = m * k, matB = k * n, matC = m * n;
    forEachBroadcast<2>(s.batch, strides, [&](int64_t o, const auto &off) {
      gemm<T>(s.transA, s.transB, m, n, k, 1, pa + off[0] * matA, s.lda(),
              pb + off[1] * matB, s.ldb(), 0, pc + o * matC, n);
    });
  });
}

void gemmKernel(const KernelCall &call) {
  const Tensor &a = call.in[0], &b = call.in[1], &y = call.out[0];
  bool transA = call.b("transA"), transB = call.b("transB");
  int64_t m = y.shape[0], n = y.shape[1];
  int64_t k = transA ? a.shape[0] : a.shape[1];
  double alpha = call.f("alpha"), beta = call.f("beta");
  dispatchFloat(call, a.dtype, [&]<typename T>() {
    T *pc = y.as<T>();
    T betaT = 0;
    if (call.in.size() > 2) {
      // Y = beta * C (broadcast) first, then GEMM accumulates into it.
      const Tensor &c = call.in[2];
      std::array<std::vector<int64_t>, 1> strides = {
          broadcastStrides(c.shape, y.shape)};
      const T *src = c.as<T>();
      forEachBroadcast<1>(y.shape, strides, [&](int64_t o, const auto &off) {
        pc[o] = src[off[0]];
      });
      betaT = static_cast<T>(beta);
    }
    gemm<T>(transA, transB, m, n, k, static_cast<T>(alpha), a.as<T>(),
            a.shape[1], b.as<T>(), b.shape[1], betaT, pc, n);
  });
}

} // namespace

void registerLinearAlgebraKernels(KernelTable &t) {
  t[Op::MatMul] = matmul;
  t[Op::Gemm] = gemmKernel;
}

} // namespace weft::rt
