//===- Attention.cpp - fused core attention on the CPU --------------------===//
//
// attention and attention_grad (AttentionSpecs.cpp): FlashAttention's
// algorithm (Dao et al. 2022, Algorithms 1, 2 and 4) blocked over query
// rows, with the whole key range a block wide: per (batch, head) and block
// of kRows queries, the scores S = scale q k^T are one BLAS GEMM, the
// softmax (max, sums in double, as the CPU softmax, and its exp in vector
// lanes, CpuVector.h: with scalar libm's exp the kernel ran at half the
// step's GEMM rate) and the dropout mask are applied in place, and P v is a
// second GEMM. Only a [kRows, Sk] block of scores ever exists; the backward
// recomputes P = exp(S - stats) block by block and accumulates dk and dv
// over the blocks. A causal block's
// GEMMs stop at its last row's keys (the rest of its scores are masked):
// half the FLOPs of the whole square.
//
// A bias (an additive mask broadcasting to the scores) is added to each
// score row before the softmax, forward and recomputed backward. A row
// whose every score is -inf gives 0 and stats -inf (FlashAttention's and
// ONNX Attention-23's convention), not the NaN exp(-inf - -inf) would.
//
// The dropout bits are DropoutMask's for the probabilities [.., Sq, Sk]:
// the unfused dropout's bits, so a fused and an unfused plan drop the same
// probabilities. Under layout "bshd" ([B, S, H, D] operands) a pair's rows
// are H D elements apart, under "bs3hd" (q, k, v packed [B, S, 3, H, D],
// and so their gradients) 3 H D apart from the part's offset: the GEMMs'
// leading dimensions say so, and nothing is copied (AttentionGeometry.h).
//
//===----------------------------------------------------------------------===//

#include "AttentionGeometry.h"
#include "CpuVector.h"
#include "DropoutMask.h"
#include "Gemm.h"
#include "Kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace weft::rt {

namespace {

/// Query rows per block: a 64 x Sk score block stays in cache for the
/// softmax and feeds BLAS a GEMM of useful size.
constexpr int64_t kRows = 64;

/// The call's sizes and strides (AttentionGeometry) and its attributes.
struct Geometry : AttentionGeometry {
  double scale;
  bool causal;
  /// Dropout (ratio > 0): the mask of the probabilities and 1 / (1 - p).
  bool dropout = false;
  DropoutMask mask;
  double keepScale = 1.0;
  /// The bias, input `biasIndex` when present: pair n's offset is the dot
  /// of its leading index with `biasLead` (0 along a broadcast dim), row
  /// i's `i * biasRow` more (0 when the bias has one row for all).
  bool hasBias = false;
  std::vector<int64_t> lead, biasLead;
  int64_t biasRow = 0;

  Geometry(const KernelCall &call, size_t biasIndex)
      : AttentionGeometry(AttentionGeometry::of(
            call.in[0].shape, call.in[1].shape, call.in[2].shape,
            AttentionGeometry::layoutOf(call))) {
    if (call.in.size() > biasIndex) {
      // [.., Sq or 1, Sk] over q's [.., Sq, D] (AttentionSpecs.cpp's
      // checkBias: no layout, so q's leading dims are the pairs').
      const std::vector<int64_t> &b = call.in[biasIndex].shape,
                                 &q = call.in[0].shape;
      hasBias = true;
      lead.assign(q.begin(), q.end() - 2);
      biasLead.resize(lead.size());
      int64_t stride = b.back() * b[b.size() - 2];
      for (int64_t d = int64_t(lead.size()) - 1; d >= 0; --d) {
        biasLead[d] = b[d] == 1 ? 0 : stride;
        stride *= b[d];
      }
      biasRow = b[b.size() - 2] == 1 ? 0 : b.back();
    }
    scale = call.f("scale");
    causal = call.flag("causal");
    double ratio = call.has("dropout_ratio") ? call.f("dropout_ratio") : 0.0;
    if (ratio > 0) {
      dropout = true;
      mask = DropoutMask::of(call, probabilities(call.in[0].shape), ratio);
      keepScale = 1.0 / (1.0 - ratio);
    }
  }

  /// Row strides of q (and dq), k (dk), v (dv) and the output (dO).
  int64_t ldq() const { return rowStride(AttentionOperand::Q); }
  int64_t ldk() const { return rowStride(AttentionOperand::K); }
  int64_t ldv() const { return rowStride(AttentionOperand::V); }
  int64_t ldo() const { return rowStride(AttentionOperand::Out); }
  /// Row 0 of pair n in `operand` (or its gradient), from `data`, the
  /// operand's buffer (under bs3hd q, k and v share one).
  template <typename T>
  T *pair(T *data, int64_t n, AttentionOperand operand) const {
    return data + base(n, operand);
  }

  /// Keys query row i attends to: [0, keys(i)).
  int64_t keys(int64_t i) const { return causal ? std::min(i + 1, sk) : sk; }
  /// Keys any of the query rows [i0, i0 + rows) attends to: the columns
  /// of their score block that the GEMMs compute.
  int64_t span(int64_t i0, int64_t rows) const { return keys(i0 + rows - 1); }

  /// Offset of pair n's row 0 in the bias.
  int64_t biasPair(int64_t n) const {
    int64_t at = 0;
    for (int64_t d = int64_t(lead.size()) - 1; d >= 0; --d) {
      at += (n % lead[d]) * biasLead[d];
      n /= lead[d];
    }
    return at;
  }
  /// Adds row i of pair n's bias (`bias` the bias buffer) to the first
  /// `width` scores of `row`.
  template <typename T>
  void addBias(const T *bias, int64_t n, int64_t i, T *row,
               int64_t width) const {
    if (!hasBias)
      return;
    const T *b = bias + biasPair(n) + i * biasRow;
    for (int64_t j = 0; j < width; ++j)
      row[j] += b[j];
  }

  /// Multiplies the first `width` probabilities of row i of head n by the
  /// dropout's keep / (1 - p), as weft.dropout scales them.
  template <typename T>
  void drop(int64_t n, int64_t i, T *row, int64_t width) const {
    if (!dropout)
      return;
    int64_t first = (n * sq + i) * sk, cached = -1;
    PhiloxBlock block{};
    for (int64_t j = 0; j < width; ++j) {
      int64_t g = mask.global(first + j);
      if (g / 4 != cached) {
        cached = g / 4;
        block = mask.block(g);
      }
      row[j] = mask.keeps(block, g) ? static_cast<T>(row[j] * keepScale) : T(0);
    }
  }
};

/// scores[r, :width] = scale q[i0 + r] k[:width]^T for rows [i0, i0 +
/// rows) of a pair (q, k its row 0), width = g.span(i0, rows) (row stride
/// g.sk).
template <typename T>
void scoreBlock(const Geometry &g, const T *q, const T *k, int64_t i0,
                int64_t rows, T *scores) {
  gemm<T>(false, true, rows, g.span(i0, rows), g.d, T(g.scale),
          q + i0 * g.ldq(), g.ldq(), k, g.ldk(), T(0), scores, g.sk);
}

template <typename T> void attention(const KernelCall &call) {
  Geometry g(call, 3);
  const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(),
          *v = call.in[2].as<T>();
  const T *bias = g.hasBias ? call.in[3].as<T>() : nullptr;
  T *out = call.out[0].as<T>(), *stats = call.out[1].as<T>();
  std::vector<T> p(kRows * g.sk);
  for (int64_t n = 0; n < g.pairs(); ++n) {
    const T *qn = g.pair(q, n, AttentionOperand::Q),
            *kn = g.pair(k, n, AttentionOperand::K),
            *vn = g.pair(v, n, AttentionOperand::V);
    T *outN = g.pair(out, n, AttentionOperand::Out);
    for (int64_t i0 = 0; i0 < g.sq; i0 += kRows) {
      int64_t rows = std::min(kRows, g.sq - i0), width = g.span(i0, rows);
      scoreBlock(g, qn, kn, i0, rows, p.data());
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = i0 + r, keys = g.keys(i);
        T *row = p.data() + r * g.sk;
        g.addBias(bias, n, i, row, keys);
        T max = vec::max(row, keys);
        if (max == -std::numeric_limits<T>::infinity()) {
          // Every key masked: the row attends to nothing.
          std::fill(row, row + width, T(0));
          stats[n * g.sq + i] = max;
          continue;
        }
        double sum = vec::expSum(row, keys, max, row);
        vec::map(row, row, keys, [=](T e) { return e / sum; });
        std::fill(row + keys, row + width, T(0));
        stats[n * g.sq + i] = static_cast<T>(max + std::log(sum));
        g.drop(n, i, row, width);
      }
      gemm<T>(false, false, rows, g.dv, width, T(1), p.data(), g.sk, vn,
              g.ldv(), T(0), outN + i0 * g.ldo(), g.ldo());
    }
  }
}

/// (q, k, v, output, stats, grad) -> (dq, dk, dv), or under bs3hd the
/// packed (dq | dk | dv).
template <typename T> void attentionGrad(const KernelCall &call) {
  Geometry g(call, 6);
  const T *bias = g.hasBias ? call.in[6].as<T>() : nullptr;
  const T *q = call.in[0].as<T>(), *k = call.in[1].as<T>(),
          *v = call.in[2].as<T>(), *o = call.in[3].as<T>(),
          *stats = call.in[4].as<T>(), *dO = call.in[5].as<T>();
  bool packed = call.out.size() == 1;
  T *dq = call.out[0].as<T>(), *dk = call.out[packed ? 0 : 1].as<T>(),
    *dv = call.out[packed ? 0 : 2].as<T>();
  // P and the dropped P' (P itself without a dropout); dP' and then dS in
  // place.
  std::vector<T> p(kRows * g.sk), ds(kRows * g.sk);
  std::vector<T> dropped(g.dropout ? kRows * g.sk : 0);
  const T *pDropped = g.dropout ? dropped.data() : p.data();
  for (int64_t n = 0; n < g.pairs(); ++n) {
    const T *qn = g.pair(q, n, AttentionOperand::Q),
            *kn = g.pair(k, n, AttentionOperand::K),
            *vn = g.pair(v, n, AttentionOperand::V),
            *on = g.pair(o, n, AttentionOperand::Out),
            *dOn = g.pair(dO, n, AttentionOperand::Out);
    T *dqn = g.pair(dq, n, AttentionOperand::Q),
      *dkn = g.pair(dk, n, AttentionOperand::K),
      *dvn = g.pair(dv, n, AttentionOperand::V);
    // The first query head of a kv head's group starts its dk and dv; the
    // group's others add to them (grouped-query attention).
    if (n % g.group() == 0)
      for (int64_t j = 0; j < g.sk; ++j) {
        std::fill_n(dkn + j * g.ldk(), g.d, T(0));
        std::fill_n(dvn + j * g.ldv(), g.dv, T(0));
      }
    for (int64_t i0 = 0; i0 < g.sq; i0 += kRows) {
      int64_t rows = std::min(kRows, g.sq - i0), width = g.span(i0, rows);
      const T *dOBlock = dOn + i0 * g.ldo();
      scoreBlock(g, qn, kn, i0, rows, p.data());
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = i0 + r, keys = g.keys(i);
        T *row = p.data() + r * g.sk;
        T lse = stats[n * g.sq + i];
        g.addBias(bias, n, i, row, keys);
        // A row with every key masked (stats -inf) has P = 0.
        if (lse == -std::numeric_limits<T>::infinity())
          std::fill(row, row + keys, T(0));
        else
          vec::expSum(row, keys, lse, row); // P = exp(S - lse); sum unused
        std::fill(row + keys, row + width, T(0));
        if (g.dropout) {
          std::copy(row, row + width, dropped.data() + r * g.sk);
          g.drop(n, i, dropped.data() + r * g.sk, width);
        }
      }
      // dv[:width] += P'^T dO; dP' = dO v[:width]^T.
      gemm<T>(true, false, width, g.dv, rows, T(1), pDropped, g.sk, dOBlock,
              g.ldo(), T(1), dvn, g.ldv());
      gemm<T>(false, true, rows, width, g.dv, T(1), dOBlock, g.ldo(), vn,
              g.ldv(), T(0), ds.data(), g.sk);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = i0 + r;
        // D_i = dO_i . O_i = sum_j P_ij dP_ij (Algorithm 4, line 19).
        const T *oRow = on + i * g.ldo(), *dORow = dOBlock + r * g.ldo();
        double dot = 0;
        for (int64_t c = 0; c < g.dv; ++c)
          dot += double(dORow[c]) * oRow[c];
        // dP = dP' through the dropout (its own adjoint), then
        // dS = P (dP - D).
        T *dsRow = ds.data() + r * g.sk;
        g.drop(n, i, dsRow, width);
        vec::map(p.data() + r * g.sk, dsRow, dsRow, width,
                 [=](T pij, T dpij) { return pij * (dpij - dot); });
      }
      // dq = scale dS k[:width]; dk[:width] += scale dS^T q.
      gemm<T>(false, false, rows, g.d, width, T(g.scale), ds.data(), g.sk, kn,
              g.ldk(), T(0), dqn + i0 * g.ldq(), g.ldq());
      gemm<T>(true, false, width, g.d, rows, T(g.scale), ds.data(), g.sk,
              qn + i0 * g.ldq(), g.ldq(), T(1), dkn, g.ldk());
    }
  }
}

} // namespace

void registerAttentionKernels(KernelTable &t) {
  t[Op::Attention] = [](const KernelCall &call) {
    dispatchFloat(call, call.in[0].dtype,
                  [&]<typename T>() { attention<T>(call); });
  };
  t[Op::AttentionGrad] = [](const KernelCall &call) {
    dispatchFloat(call, call.in[0].dtype,
                  [&]<typename T>() { attentionGrad<T>(call); });
  };
}

} // namespace weft::rt
