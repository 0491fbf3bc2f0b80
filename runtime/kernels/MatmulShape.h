//===- MatmulShape.h - numpy matmul's operand geometry ----------*- C++ -*-===//
//
// ONNX MatMul-13 (numpy matmul): 1-D operands are promoted ([K] -> [1, K]
// on the left, [K] -> [K, 1] on the right), the batch dims broadcast;
// weft's transA/transB read an operand's last two dims swapped. The
// CPU (OpenBLAS) and CUDA (cuBLASLt) kernels both plan their GEMMs from it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_MATMULSHAPE_H
#define WEFT_RUNTIME_KERNELS_MATMULSHAPE_H

#include "weft/runtime/Tensor.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace weft::rt {

struct MatmulShape {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  std::vector<int64_t> batchA, batchB; ///< each operand's batch dims
  std::vector<int64_t> batch;          ///< their broadcast

  /// With `transA` (`transB`), A (B) is stored as [..., K, M] ([..., N,
  /// K]) and read transposed; both need rank >= 2.
  static MatmulShape of(const Tensor &lhs, const Tensor &rhs,
                        bool transA = false, bool transB = false) {
    std::vector<int64_t> a = lhs.shape, b = rhs.shape;
    if (a.size() == 1)
      a.insert(a.begin(), 1);
    if (b.size() == 1)
      b.push_back(1);
    if (transA)
      std::swap(a[a.size() - 2], a[a.size() - 1]);
    if (transB)
      std::swap(b[b.size() - 2], b[b.size() - 1]);
    MatmulShape s;
    s.transA = transA;
    s.transB = transB;
    s.m = a[a.size() - 2];
    s.k = a.back();
    s.n = b.back();
    s.batchA.assign(a.begin(), a.end() - 2);
    s.batchB.assign(b.begin(), b.end() - 2);
    size_t rank = std::max(s.batchA.size(), s.batchB.size());
    s.batch.resize(rank);
    for (size_t i = 0; i < rank; ++i) {
      size_t offA = rank - s.batchA.size(), offB = rank - s.batchB.size();
      int64_t da = i < offA ? 1 : s.batchA[i - offA];
      int64_t db = i < offB ? 1 : s.batchB[i - offB];
      s.batch[i] = da == 1 ? db : da;
    }
    return s;
  }

  int64_t batchCount() const {
    int64_t count = 1;
    for (int64_t d : batch)
      count *= d;
    return count;
  }
  /// Leading dimensions of the row-major operands as stored.
  int64_t lda() const { return transA ? m : k; }
  int64_t ldb() const { return transB ? k : n; }
  /// [..., M, K] x [K, N] (a weight): the batch folds into M, one GEMM.
  bool foldsIntoM() const {
    return !transA && batchA.size() == batch.size() &&
           std::all_of(batchB.begin(), batchB.end(),
                       [](int64_t d) { return d == 1; });
  }
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_MATMULSHAPE_H
