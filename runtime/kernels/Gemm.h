//===- Gemm.h - row-major GEMM through OpenBLAS for float and double -*- C++ -*-===//
#ifndef WEFT_RUNTIME_KERNELS_GEMM_H
#define WEFT_RUNTIME_KERNELS_GEMM_H

#include <cblas.h>

#include <cstdint>
#include <type_traits>

namespace weft::rt {

/// C = alpha op(A) op(B) + beta C, row-major: cblas_sgemm or cblas_dgemm.
/// An empty result (m or n 0) is a no-op.
template <typename T>
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, T alpha,
          const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
          int64_t ldc) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
  if (m == 0 || n == 0)
    return;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c,
                ldc);
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_GEMM_H
