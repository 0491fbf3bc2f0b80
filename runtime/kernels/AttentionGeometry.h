//===- AttentionGeometry.h - fused attention's operand layout ---*- C++ -*-===//
//
// Where an attention's rows live (lib/Dialect/Weft/IR/WeftAttentionOps.td),
// written once for the plan's spec check, the CPU kernel and cuDNN's
// tensor descriptors. The `layout` attribute names one of three forms
// (Transformer Engine's names for the last two):
//
//   none    q, k, v and the output [.., S, D] (the leading dims: batch,
//           then heads);
//   "bshd"  q, k, v and the output [B, S, H, D];
//   "bs3hd" q, k and v one packed [B, S, 3, H, D] tensor, the projection's
//           [B, S, 3 H D] itself: q is part 0, k part 1, v part 2; the
//           output [B, S, H, D]; the gradient one packed tensor too.
//
// Every form runs the attention over N = B H independent (batch, head)
// pairs n = b H + h, the stats are [B, H, Sq] and the dropout mask is that
// of the probabilities [B, H, Sq, Sk]: the layout changes strides and
// offsets, not results.
//
// Grouped-query attention (Ainslie et al. 2023): k and v may have Hkv
// heads, Hkv dividing H, under none (rank 4) and bshd; query head h reads
// kv head h / (H / Hkv), the head Hugging Face's repeat_kv copies to it.
// Multi-query attention is Hkv = 1.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H
#define WEFT_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H

#include <compare>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace weft::rt {

/// The `layout` attribute's values.
inline constexpr std::string_view kAttentionBshd = "bshd";
inline constexpr std::string_view kAttentionBs3hd = "bs3hd";

enum class AttentionLayout { Heads, Bshd, Bs3hd };

/// Which tensor a stride or offset is of: q (and dq), k (and dk), v (and
/// dv), or the output (and its gradient dO). Under bs3hd the first three
/// are the parts 0, 1, 2 of one packed tensor.
enum class AttentionOperand { Q = 0, K = 1, V = 2, Out = 3 };

struct AttentionGeometry {
  /// Batch B and heads H (N = B H pairs), k's and v's heads Hkv (H
  /// divides by it), query and key lengths, the q/k and v head dims.
  int64_t batch = 1, heads = 1, kvHeads = 1, sq = 0, sk = 0, d = 0, dv = 0;
  AttentionLayout layout = AttentionLayout::Heads;

  auto operator<=>(const AttentionGeometry &) const = default;

  /// The layout a present `layout` attribute names; nothing for an
  /// unknown name (an absent attribute is Heads).
  static std::optional<AttentionLayout> layoutNamed(std::string_view name) {
    if (name == kAttentionBshd)
      return AttentionLayout::Bshd;
    if (name == kAttentionBs3hd)
      return AttentionLayout::Bs3hd;
    return std::nullopt;
  }

  /// The layout of a call whose attributes `attrs` (a KernelCall's or a
  /// SpecCall's) the spec check has passed.
  template <typename Attrs>
  static AttentionLayout layoutOf(const Attrs &attrs) {
    return attrs.has("layout")
               ? layoutNamed(attrs.s("layout")).value_or(AttentionLayout::Heads)
               : AttentionLayout::Heads;
  }

  /// An operand's shape as [.., S, D]: under bshd dims 1 and 2 swap;
  /// under bs3hd the part dim goes too ([B, S, 3, H, D] -> [B, H, S, D]).
  static std::vector<int64_t> canonical(std::vector<int64_t> shape,
                                        AttentionLayout layout) {
    if (layout == AttentionLayout::Bs3hd && shape.size() == 5)
      shape.erase(shape.begin() + 2);
    if (layout != AttentionLayout::Heads && shape.size() == 4)
      std::swap(shape[1], shape[2]);
    return shape;
  }

  /// The output's shape from its canonical [.., Sq, Dv]: [B, Sq, H, Dv]
  /// under either [B, S, ..] layout.
  static std::vector<int64_t> output(std::vector<int64_t> canonicalShape,
                                     AttentionLayout layout) {
    if (layout != AttentionLayout::Heads && canonicalShape.size() == 4)
      std::swap(canonicalShape[1], canonicalShape[2]);
    return canonicalShape;
  }

  /// From q, k, v shapes already checked against each other (the spec's
  /// check): rank 4 under bshd, 5 under bs3hd.
  static AttentionGeometry of(const std::vector<int64_t> &q,
                              const std::vector<int64_t> &k,
                              const std::vector<int64_t> &v,
                              AttentionLayout layout) {
    std::vector<int64_t> qc = canonical(q, layout);
    size_t r = qc.size();
    AttentionGeometry g;
    g.layout = layout;
    g.batch = r > 2 ? qc[0] : 1;
    std::vector<int64_t> kc = canonical(k, layout);
    g.kvHeads = 1;
    for (size_t i = 1; i + 2 < r; ++i) {
      g.heads *= qc[i];
      g.kvHeads *= kc[i];
    }
    g.sq = qc[r - 2];
    g.d = qc[r - 1];
    g.sk = kc[r - 2];
    g.dv = v.back();
    return g;
  }

  int64_t pairs() const { return batch * heads; }
  /// Query heads per kv head (1 without grouped-query attention).
  int64_t group() const { return heads / kvHeads; }
  /// Heads of `operand`: Hkv for k and v, H for q and the output.
  int64_t headsOf(AttentionOperand operand) const {
    return operand == AttentionOperand::K || operand == AttentionOperand::V
               ? kvHeads
               : heads;
  }
  /// Pairs (batch, head) of `operand`'s buffer.
  int64_t pairsOf(AttentionOperand operand) const {
    return batch * headsOf(operand);
  }

  /// The head dim of `operand`'s rows: d for q and k, dv for v and the
  /// output.
  int64_t width(AttentionOperand operand) const {
    return operand == AttentionOperand::Q || operand == AttentionOperand::K
               ? d
               : dv;
  }
  /// Sequence rows of `operand`: sq for q and the output, sk for k and v.
  int64_t rows(AttentionOperand operand) const {
    return operand == AttentionOperand::Q || operand == AttentionOperand::Out
               ? sq
               : sk;
  }

  /// Elements between consecutive sequence rows of `operand`.
  int64_t rowStride(AttentionOperand operand) const {
    if (layout == AttentionLayout::Heads)
      return width(operand);
    return parts(operand) * headsOf(operand) * width(operand);
  }
  /// Offset of row 0 of query pair n in `operand` (k and v: of the kv
  /// head query head h reads).
  int64_t base(int64_t n, AttentionOperand operand) const {
    int64_t w = width(operand), s = rows(operand), hs = headsOf(operand);
    int64_t b = n / heads, h = n % heads / (heads / hs);
    if (layout == AttentionLayout::Heads)
      return (b * hs + h) * s * w;
    return ((b * s * parts(operand) + part(operand)) * hs + h) * w;
  }
  /// [b, h, s, d] strides of `operand` (cuDNN's dims order), from its
  /// first element at base(0, operand).
  std::vector<int64_t> strides(AttentionOperand operand) const {
    int64_t w = width(operand), s = rows(operand);
    if (layout == AttentionLayout::Heads)
      return {headsOf(operand) * s * w, s * w, w, 1};
    int64_t row = rowStride(operand);
    return {s * row, w, row, 1};
  }
  /// The probabilities' shape [B, H, Sq, Sk] as the mask sees it: q's
  /// canonical leading dims, Sq, Sk.
  std::vector<int64_t> probabilities(const std::vector<int64_t> &q) const {
    std::vector<int64_t> p = canonical(q, layout);
    p.back() = sk;
    return p;
  }

private:
  /// Tensors packed in `operand`'s buffer, and its index among them.
  int64_t parts(AttentionOperand operand) const {
    return layout == AttentionLayout::Bs3hd && operand != AttentionOperand::Out
               ? 3
               : 1;
  }
  int64_t part(AttentionOperand operand) const {
    return parts(operand) == 3 ? int64_t(operand) : 0;
  }
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_ATTENTIONGEOMETRY_H
