//===- AttentionGeometry.h - fused attention's operand layout ---*- C++ -*-===//
//
// Where an attention's rows live (lib/Dialect/Weft/IR/WeftAttentionOps.td),
// written once for the plan's spec check, the CPU kernel and cuDNN's
// tensor descriptors. Operands are [.., S, D] (the leading dims: batch,
// then heads) or, with layout "bshd", [B, S, H, D]. Either way the
// attention runs over N = B H independent (batch, head) pairs n = b H + h,
// the stats are [B, H, Sq] and the dropout mask is that of the
// probabilities [B, H, Sq, Sk]: the layout changes strides, not results.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H
#define WEFT_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H

#include <compare>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::rt {

/// The `layout` attribute's one value: operands [B, S, H, D].
inline constexpr std::string_view kAttentionBshd = "bshd";

struct AttentionGeometry {
  /// Batch B and heads H (N = B H pairs), query and key lengths, the q/k
  /// and v head dims.
  int64_t batch = 1, heads = 1, sq = 0, sk = 0, d = 0, dv = 0;
  bool bshd = false;

  auto operator<=>(const AttentionGeometry &) const = default;

  /// `shape` ([B, S, H, D] under bshd) as [.., S, D]: dims 1 and 2 swap.
  static std::vector<int64_t> canonical(std::vector<int64_t> shape,
                                        bool bshd) {
    if (bshd && shape.size() == 4)
      std::swap(shape[1], shape[2]);
    return shape;
  }

  /// From q, k, v shapes already checked against each other (the spec's
  /// check); rank 4 under bshd.
  static AttentionGeometry of(const std::vector<int64_t> &q,
                              const std::vector<int64_t> &k,
                              const std::vector<int64_t> &v, bool bshd) {
    std::vector<int64_t> qc = canonical(q, bshd);
    size_t r = qc.size();
    AttentionGeometry g;
    g.bshd = bshd;
    g.batch = r > 2 ? qc[0] : 1;
    for (size_t i = 1; i + 2 < r; ++i)
      g.heads *= qc[i];
    g.sq = qc[r - 2];
    g.d = qc[r - 1];
    g.sk = canonical(k, bshd)[r - 2];
    g.dv = v.back();
    return g;
  }

  int64_t pairs() const { return batch * heads; }

  /// Elements between consecutive sequence rows of an operand whose head
  /// dim is `width` (d or dv).
  int64_t rowStride(int64_t width) const {
    return bshd ? heads * width : width;
  }
  /// Offset of row 0 of pair n in an operand of `seq` rows of `width`.
  int64_t base(int64_t n, int64_t seq, int64_t width) const {
    return bshd ? (n / heads * seq * heads + n % heads) * width
                : n * seq * width;
  }
  /// [b, h, s, d] strides of such an operand (cuDNN's dims order).
  std::vector<int64_t> strides(int64_t seq, int64_t width) const {
    if (bshd)
      return {seq * heads * width, width, heads * width, 1};
    return {heads * seq * width, seq * width, width, 1};
  }
  /// The probabilities' shape [B, H, Sq, Sk] as the mask sees it: q's
  /// canonical leading dims, Sq, Sk.
  std::vector<int64_t> probabilities(const std::vector<int64_t> &q) const {
    std::vector<int64_t> p = canonical(q, bshd);
    p.back() = sk;
    return p;
  }
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H
