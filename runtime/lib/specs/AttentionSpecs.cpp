//===- AttentionSpecs.cpp - fused core attention and its gradient ---------===//
//
// weft.attention and weft.attention_grad (lib/Dialect/Weft/IR/
// WeftAttentionOps.td): softmax(scale q k^T, causal) [dropout] v with the
// log-sum-exp statistics FlashAttention's backward recomputes from (Dao et
// al. 2022). The dropout attributes are dropout's, for the mask of the
// probabilities [.., Sq, Sk]; `layout` "bshd" takes q, k, v and gives the
// output as [B, S, H, D], "bs3hd" takes them as one packed [B, S, 3, H, D]
// tensor and gives one packed gradient (AttentionGeometry.h), the rest
// unchanged. Rank-4 k and v may have fewer heads than q (grouped-query
// attention, Ainslie et al. 2023).
//
//===----------------------------------------------------------------------===//

#include "Specs.h"

#include "../../kernels/AttentionGeometry.h"

#include <cmath>

namespace weft::rt::specs {

namespace {

/// The call's layout; an unknown one, or operands of the wrong rank for
/// it, fail naming it.
AttentionLayout layoutOf(const SpecCall &call) {
  if (!call.attrs.has("layout"))
    return AttentionLayout::Heads;
  const std::string &name = call.attrs.s("layout");
  std::optional<AttentionLayout> layout = AttentionGeometry::layoutNamed(name);
  if (!layout)
    call.fail("attribute 'layout' is '" + name +
              "', expected \"bshd\", \"bs3hd\" (or none: [.., S, D])");
  const TensorType &q = call.in[0];
  if (*layout == AttentionLayout::Bshd && q.rank() != 4)
    call.fail("layout \"bshd\" takes q, k and v [B, S, H, D], got " +
              typeString(q));
  if (*layout == AttentionLayout::Bs3hd &&
      (q.rank() != 5 || q.shape[2] != 3 || call.in[1] != q || call.in[2] != q))
    call.fail("layout \"bs3hd\" takes q, k and v as one packed [B, S, 3, "
              "H, D] type, got " +
              typeString(q) + ", " + typeString(call.in[1]) + ", " +
              typeString(call.in[2]));
  return *layout;
}

/// Checks the additive bias, input `index`: the probabilities' rank and
/// q's dtype, each dim theirs or 1, the last the keys'; the [.., S, D]
/// layout only (the kernels index it by (batch, head) pair).
void checkBias(const SpecCall &call, size_t index,
               const std::vector<int64_t> &probs, AttentionLayout layout) {
  const TensorType &bias = call.in[index];
  call.requireSameDType(0, int(index));
  if (layout != AttentionLayout::Heads)
    call.fail("a bias needs q, k and v [.., S, D] (no layout attribute)");
  bool fits =
      bias.rank() == int64_t(probs.size()) && bias.shape.back() == probs.back();
  for (size_t d = 0; fits && d + 1 < probs.size(); ++d)
    fits = bias.shape[d] == probs[d] || bias.shape[d] == 1;
  if (!fits) {
    std::string want;
    for (int64_t d : probs)
      want += (want.empty() ? "" : ", ") + std::to_string(d);
    call.fail("the bias " + typeString(bias) +
              " does not broadcast to the scores [" + want +
              "] (each dim theirs or 1, the last the keys')");
  }
}

/// Checks q [.., Sq, D], k [.., Sk, D], v [.., Sk, Dv] (their canonical
/// shapes: AttentionGeometry.h) and the attributes; returns (output as q
/// with Dv, [B, Sq, H, Dv] under either [B, S, ..] layout; stats [.., Sq]
/// f32, f64 for f64 q). The bias, when there is one, is input
/// `biasIndex` (the forward's 3, the backward's 6).
Types attentionOutputs(const SpecCall &call, size_t biasIndex) {
  const TensorType &q = call.in[0], &k = call.in[1], &v = call.in[2];
  call.requireSameDType(0, 1);
  call.requireSameDType(0, 2);
  AttentionLayout layout = layoutOf(call);
  auto shape = [&](const TensorType &t) {
    return AttentionGeometry::canonical(t.shape, layout);
  };
  std::vector<int64_t> qs = shape(q), ks = shape(k), vs = shape(v);
  int64_t r = int64_t(qs.size());
  auto lead = [](const std::vector<int64_t> &s) {
    return std::vector<int64_t>(s.begin(), s.end() - 2);
  };
  // Grouped-query attention: [B, Hkv, S, D] k and v, Hkv dividing H.
  auto grouped = [&](std::vector<int64_t> kv) {
    if (r == 4 && kv.size() == 4 && kv[1] > 0 && qs[1] % kv[1] == 0)
      kv[1] = qs[1];
    return lead(kv);
  };
  if (r < 2 || k.rank() != q.rank() || v.rank() != q.rank() ||
      grouped(ks) != lead(qs) || lead(vs) != lead(ks) ||
      ks[r - 1] != qs[r - 1] || vs[r - 2] != ks[r - 2])
    call.fail(std::string(layout == AttentionLayout::Bshd
                              ? "expects q [B, Sq, H, D], k [B, Sk, Hkv, D], "
                                "v [B, Sk, Hkv, Dv], Hkv dividing H"
                              : "expects q [.., Sq, D], k [.., Sk, D], v "
                                "[.., Sk, Dv] with the same leading dims "
                                "(rank 4: k and v with Hkv heads dividing "
                                "q's H)") +
              ", got " + typeString(q) + ", " + typeString(k) + ", " +
              typeString(v));
  double scale = call.attrs.f("scale");
  if (!(scale > 0.0) || !std::isfinite(scale))
    call.fail("attribute 'scale' is " + std::to_string(scale) +
              ", expected a positive finite number");
  if (call.attrs.flag("causal") && qs[r - 2] != ks[r - 2])
    call.fail("a causal mask needs as many queries as keys, got " +
              std::to_string(qs[r - 2]) + " and " + std::to_string(ks[r - 2]));
  if (call.attrs.has("dropout_ratio")) {
    double p = call.attrs.f("dropout_ratio");
    if (!(p >= 0.0 && p < 1.0))
      call.fail("attribute 'dropout_ratio' is " + std::to_string(p) +
                ", expected [0, 1)");
  }
  std::vector<int64_t> rows(qs.begin(), qs.end() - 1);
  std::vector<int64_t> out = rows;
  out.push_back(vs[r - 1]);
  // The dropout mask's shard is of the probabilities [.., Sq, Sk].
  std::vector<int64_t> probs = rows;
  probs.push_back(ks[r - 2]);
  checkDropoutShard(call, probs);
  if (call.in.size() > biasIndex)
    checkBias(call, biasIndex, probs, layout);
  DType stats = q.dtype == DType::F64 ? DType::F64 : DType::F32;
  return {{q.dtype, AttentionGeometry::output(out, layout)}, {stats, rows}};
}

Types attention(const SpecCall &call) { return attentionOutputs(call, 3); }

Types attentionGrad(const SpecCall &call) {
  Types forward = attentionOutputs(call, 6);
  call.requireType(3, forward[0], "the output");
  call.requireType(4, forward[1], "the stats");
  call.requireType(5, forward[0], "the output gradient");
  // Under bs3hd dq, dk and dv are the parts of one packed gradient.
  if (layoutOf(call) == AttentionLayout::Bs3hd)
    return {call.in[0]};
  return {call.in[0], call.in[1], call.in[2]};
}

/// The score count N Sq Sk and the head dims D, Dv.
struct Sizes {
  int64_t scores, d, dv;
};
Sizes sizesOf(const SpecCall &call) {
  AttentionGeometry g = AttentionGeometry::of(
      call.in[0].shape, call.in[1].shape, call.in[2].shape,
      AttentionGeometry::layoutOf(call.attrs));
  return {satMul(satMul(g.pairs(), g.sq), g.sk), g.d, g.dv};
}

int64_t attentionFlops(const SpecCall &call, const Types &) {
  Sizes s = sizesOf(call);
  int64_t perScore = call.attrs.has("dropout_ratio") ? 7 : 5;
  return satMul(s.scores, 2 * (s.d + s.dv) + perScore);
}

int64_t attentionGradFlops(const SpecCall &call, const Types &) {
  Sizes s = sizesOf(call);
  return satMul(s.scores, 2 * (3 * s.d + 2 * s.dv) + 8);
}

} // namespace

void addAttentionSpecs(std::vector<KernelSpec> &t) {
  t.push_back({.op = Op::Attention,
               .source = "weft.attention (FlashAttention, Dao et al. 2022)",
               .infer = attention,
               .flops = attentionFlops,
               .dtypeNote = "the stats f32 (f64 beside f64)"});
  t.push_back({.op = Op::AttentionGrad,
               .source = "attention adjoint (FlashAttention's backward)",
               .infer = attentionGrad,
               .flops = attentionGradFlops,
               .dtypeNote = "the stats f32 (f64 beside f64)"});
}

} // namespace weft::rt::specs
