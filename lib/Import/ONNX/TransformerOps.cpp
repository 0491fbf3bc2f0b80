//===- TransformerOps.cpp - ONNX RotaryEmbedding-23, Attention-23 -> weft -===//
//
// The two opset-23 operators a Llama block exports as (torch.onnx at opset
// 23 writes scaled_dot_product_attention as Attention). Both become the ops
// weft's passes already know: RotaryEmbedding is weft.rotary on tables
// widened to the rotated dims; Attention is the core-attention ops the
// exporters write by hand (q k^T, a scale, a mask, softmax, x v), which
// weft-fuse-attention fuses under --flash-attention and weft-checkpoint's
// selective recompute finds, with grouped-query attention's k and v repeated
// as Hugging Face's repeat_kv does (the fused kernel reads the kv heads
// without the copies).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace weft;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `x` reshaped to `[d0, d1, heads, dim / heads]` and transposed to
/// `[d0, heads, d1, dim / heads]`: a 3-D `[B, S, heads * D]` operand of
/// RotaryEmbedding or Attention in the 4-D layout.
Value splitHeads(GraphImporter &g, const Node &node, Value x, int64_t heads,
                 StringRef what) {
  ArrayRef<int64_t> shape = typeOf(x).getShape();
  if (heads <= 0 || shape[2] % heads != 0) {
    g.error(node) << what << " has " << shape[2] << " features, which the "
                  << heads << " heads its attribute gives do not divide";
    return {};
  }
  Value split = g.make<ReshapeOp>(
      node, x, ArrayRef<int64_t>{shape[0], shape[1], heads, shape[2] / heads});
  return g.make<TransposeOp>(node, split, ArrayRef<int64_t>{0, 2, 1, 3});
}

/// The inverse of splitHeads: `[B, H, S, D]` -> `[B, S, H * D]`.
Value mergeHeads(GraphImporter &g, const Node &node, Value x) {
  Value t = g.make<TransposeOp>(node, x, ArrayRef<int64_t>{0, 2, 1, 3});
  if (!t)
    return {};
  ArrayRef<int64_t> s = typeOf(t).getShape();
  return g.make<ReshapeOp>(node, t, ArrayRef<int64_t>{s[0], s[1], s[2] * s[3]});
}

//===----------------------------------------------------------------------===//
// RotaryEmbedding-23
//===----------------------------------------------------------------------===//

/// A `[.., R/2]` cos or sin table widened to the `[.., R]` weft.rotary
/// reads: `cat(t, t)` for the half-split layout (element i and i + R/2
/// share angle i), each entry twice for the interleaved one (2i and 2i+1).
Value widenTable(GraphImporter &g, const Node &node, Value t,
                 bool interleaved) {
  ArrayRef<int64_t> shape = typeOf(t).getShape();
  int64_t last = shape.size() - 1;
  if (!interleaved)
    return g.make<ConcatOp>(node, ValueRange{t, t}, last);
  SmallVector<int64_t> pairs(shape), doubled(shape), widened(shape);
  pairs.push_back(1);
  doubled.push_back(2);
  widened[last] *= 2;
  Value p = g.make<ReshapeOp>(node, t, ArrayRef<int64_t>(pairs));
  Value d = g.make<ExpandOp>(node, p, ArrayRef<int64_t>(doubled));
  return g.make<ReshapeOp>(node, d, ArrayRef<int64_t>(widened));
}

/// RotaryEmbedding-23 (ONNX operator spec): X is `[B, H, S, D]`, or
/// `[B, S, H * D]` with `num_heads`; the first `rotary_embedding_dim` dims
/// of each head (all when 0) rotate, the rest pass through. The caches
/// hold angle i's cos and sin per position, `[max_pos, R/2]` indexed by
/// `position_ids [B, S]`, or `[B, S, R/2]` without them.
LogicalResult convertRotaryEmbedding(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  Value tables[2] = {g.nonTrainableOperand(node, 1, "cos_cache"),
                     g.nonTrainableOperand(node, 2, "sin_cache")};
  if (!tables[0] || !tables[1])
    return failure();
  Value positions = g.optionalOperand(node, 3);
  bool interleaved = g.attrInt(node, "interleaved");
  RankedTensorType type = typeOf(x);
  bool packed = type.getRank() == 3;
  if (!packed && type.getRank() != 4)
    return g.error(node) << "input is " << type << "; it must be [B, H, S, D] "
                         << "or [B, S, H * D]";
  // The [B, S, H, D] layout (a view of the packed form; the 4-D one is
  // [B, H, S, D]): where the heads' dim lies decides the tables' shape.
  Value heads = x;
  if (packed) {
    int64_t n = g.attrInt(node, "num_heads");
    ArrayRef<int64_t> s = type.getShape();
    if (n <= 0 || s[2] % n != 0)
      return g.error(node) << "num_heads " << n << " does not divide the "
                           << s[2] << " features of " << type;
    heads =
        g.make<ReshapeOp>(node, x, ArrayRef<int64_t>{s[0], s[1], n, s[2] / n});
    if (!heads)
      return failure();
  }
  int64_t headDim = typeOf(heads).getShape().back();
  int64_t rotated = g.attrInt(node, "rotary_embedding_dim");
  if (rotated == 0)
    rotated = headDim;
  if (rotated < 0 || rotated > headDim || rotated % 2 != 0)
    return g.error(node) << "rotary_embedding_dim " << rotated
                         << " must be even and at most the head size "
                         << headDim;
  for (Value &t : tables) {
    if (positions)
      t = g.make<GatherOp>(node, t, positions, 0);
    if (!t)
      return failure();
    ArrayRef<int64_t> s = typeOf(t).getShape();
    if (s.size() != 3 || s[2] < rotated / 2)
      return g.error(node) << "the caches give " << typeOf(t)
                           << " per position; [B, S, " << rotated / 2
                           << "] or wider is needed";
    if (s[2] != rotated / 2)
      t = g.make<SliceOp>(node, t, ArrayRef<int64_t>{0, 0, 0},
                          ArrayRef<int64_t>{s[0], s[1], rotated / 2},
                          ArrayRef<int64_t>{1, 1, 1});
    t = widenTable(g, node, t, interleaved);
    // [B, S, R] -> [B, 1, S, R] beside [B, H, S, D]; [B, S, 1, R] beside
    // [B, S, H, D].
    t = g.foldedOrSelf(
        node,
        g.make<ReshapeOp>(node, t,
                          packed ? ArrayRef<int64_t>{s[0], s[1], 1, rotated}
                                 : ArrayRef<int64_t>{s[0], 1, s[1], rotated}));
  }
  ArrayRef<int64_t> hs = typeOf(heads).getShape();
  Value part = heads;
  if (rotated != headDim)
    part = g.make<SliceOp>(node, heads, ArrayRef<int64_t>{0, 0, 0, 0},
                           ArrayRef<int64_t>{hs[0], hs[1], hs[2], rotated},
                           ArrayRef<int64_t>{1, 1, 1, 1});
  Value y = g.make<RotaryOp>(node, part, tables[0], tables[1], 3, interleaved);
  if (rotated != headDim) {
    Value rest =
        g.make<SliceOp>(node, heads, ArrayRef<int64_t>{0, 0, 0, rotated},
                        ArrayRef<int64_t>(hs), ArrayRef<int64_t>{1, 1, 1, 1});
    y = y && rest ? g.make<ConcatOp>(node, ValueRange{y, rest}, 3) : Value();
  }
  if (packed)
    y = g.make<ReshapeOp>(node, y, type.getShape());
  if (!y)
    return failure();
  g.bind(node, 0, y);
  return success();
}

//===----------------------------------------------------------------------===//
// Attention-23
//===----------------------------------------------------------------------===//

/// `kv` `[B, Hkv, S, D]` with each head repeated `times` times in place
/// (`[h0, h0, h1, h1, ..]`, numpy's repeat on axis 1; Hugging Face's
/// repeat_kv), so `[B, Hkv * times, S, D]`.
Value repeatHeads(GraphImporter &g, const Node &node, Value kv, int64_t times) {
  if (times == 1)
    return kv;
  ArrayRef<int64_t> s = typeOf(kv).getShape();
  Value spread =
      g.make<ReshapeOp>(node, kv, ArrayRef<int64_t>{s[0], s[1], 1, s[2], s[3]});
  Value copies = g.make<ExpandOp>(
      node, spread, ArrayRef<int64_t>{s[0], s[1], times, s[2], s[3]});
  return g.make<ReshapeOp>(node, copies,
                           ArrayRef<int64_t>{s[0], s[1] * times, s[2], s[3]});
}

/// The causal bias `[Sq, Skv]`: 0 where key j <= query i, -inf above
/// (Attention-23's is_causal without a KV cache: aligned top-left).
Value causalBias(GraphImporter &g, const Node &node, int64_t sq, int64_t skv,
                 Type element) {
  HostTensor bias = HostTensor::zeros(onnx::TensorProto::FLOAT, {sq, skv});
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = i + 1; j < skv; ++j)
      bias.set(i * skv + j, -std::numeric_limits<double>::infinity());
  Value c = g.constantOf(node, bias);
  return element.isF32() ? c : g.make<CastOp>(node, c, element);
}

/// True when some row (last dim) of the constant bias `b` is all -inf.
bool hasFullyMaskedRow(const HostTensor &b) {
  int64_t n = b.shape.empty() ? 1 : b.shape.back();
  for (int64_t row = 0; n > 0 && row < b.size(); row += n) {
    bool masked = true;
    for (int64_t j = 0; j < n && masked; ++j)
      masked = b.getDouble(row + j) == -std::numeric_limits<double>::infinity();
    if (masked)
      return true;
  }
  return false;
}

/// Attention-23 (ONNX operator spec) for training: Q `[B, Hq, Sq, D]`, K
/// `[B, Hkv, Skv, D]`, V `[B, Hkv, Skv, Dv]` (or 3-D with q_num_heads and
/// kv_num_heads); Y = softmax(softcap(q k^T scale) + bias) v, with the
/// scale's square root on each of q and k as the spec writes it, the bias
/// the attention mask (a bool mask as 0 / -inf) plus the causal one, and a
/// row whose every key is masked giving 0. present_key and present_value
/// are K and V; qk_matmul_output is the scores at the stage its mode
/// names. A KV cache (past_key/past_value) is inference, not training:
/// refused.
LogicalResult convertAttention(GraphImporter &g, const Node &node) {
  if (g.has(node, 4) || g.has(node, 5))
    return g.error(node) << "unsupported variant: past_key/past_value (a KV "
                            "cache, for inference; weft trains)";
  Value q = g.operand(node, 0), k = g.operand(node, 1), v = g.operand(node, 2);
  if (!q || !k || !v)
    return failure();
  int64_t rank = typeOf(q).getRank();
  if (rank != 3 && rank != 4)
    return g.error(node) << "Q is " << typeOf(q)
                         << "; it must be [B, H, S, D] or [B, S, H * D]";
  if (typeOf(k).getRank() != rank || typeOf(v).getRank() != rank)
    return g.error(node) << "Q, K and V must have one rank; they are "
                         << typeOf(q) << ", " << typeOf(k) << ", " << typeOf(v);
  if (rank == 3) {
    int64_t qHeads = g.attrInt(node, "q_num_heads", 0),
            kvHeads = g.attrInt(node, "kv_num_heads", 0);
    q = splitHeads(g, node, q, qHeads, "Q");
    k = q ? splitHeads(g, node, k, kvHeads, "K") : Value();
    v = k ? splitHeads(g, node, v, kvHeads, "V") : Value();
    if (!v)
      return failure();
  }
  Type element = typeOf(q).getElementType();
  ArrayRef<int64_t> qs = typeOf(q).getShape(), ks = typeOf(k).getShape();
  int64_t sq = qs[2], skv = ks[2];
  if (ks[1] == 0 || qs[1] % ks[1] != 0 || typeOf(v).getShape()[1] != ks[1])
    return g.error(node) << "K and V's " << ks[1] << " heads must be equal "
                         << "and divide Q's " << qs[1];
  if (int64_t precision = g.attrInt(node, "softmax_precision", 0);
      precision != 0 && precision != onnx::TensorProto::FLOAT &&
      toMLIRElementType(precision, g.context()) != element)
    return g.error(node) << "unsupported variant: softmax_precision "
                         << precision << " (weft's softmax computes in "
                         << "float32, or float64 beside float64)";
  if (g.used(node, 1))
    g.bind(node, 1, k);
  if (g.used(node, 2))
    g.bind(node, 2, v);

  // The bias: mask (bool as 0 / -inf) + causal.
  Value bias;
  if (g.has(node, 3)) {
    bias = g.nonTrainableOperand(node, 3, "attn_mask");
    if (!bias)
      return failure();
    if (typeOf(bias).getShape().back() != skv)
      return g.error(node) << "unsupported variant: attn_mask " << typeOf(bias)
                           << " is not as long as the " << skv
                           << " keys (its padding is for a KV cache)";
    if (typeOf(bias).getElementType().isInteger(1))
      bias = g.make<WhereOp>(
          node, bias, g.scalarOf(node, element, 0),
          g.scalarOf(node, element, -std::numeric_limits<double>::infinity()));
    else if (typeOf(bias).getElementType() != element)
      bias = g.make<CastOp>(node, bias, element);
  }
  bool masked = static_cast<bool>(bias);
  if (g.attrInt(node, "is_causal")) {
    Value causal = causalBias(g, node, sq, skv, element);
    bias = bias ? g.make<AddOp>(node, bias, causal) : causal;
  }
  if ((g.has(node, 3) || g.attrInt(node, "is_causal")) && !bias)
    return failure();
  // A mask the graph computes from constants (transformers' causal one) is
  // a constant to weft-fuse-attention.
  bias = g.foldedOrSelf(node, bias);

  double scale = g.attrFloat(node, "scale", 0);
  if (scale == 0)
    scale = 1 / std::sqrt(static_cast<double>(qs[3]));
  Value root = g.scalarOf(node, element, std::sqrt(scale));
  Value keys = repeatHeads(g, node, k, qs[1] / ks[1]);
  Value values = repeatHeads(g, node, v, qs[1] / ks[1]);
  Value kT = g.make<TransposeOp>(node, keys, ArrayRef<int64_t>{0, 1, 3, 2});
  Value scores = g.make<MatMulOp>(node, g.make<MulOp>(node, q, root),
                                  g.make<MulOp>(node, kT, root));
  Value capped = scores;
  if (double softcap = g.attrFloat(node, "softcap", 0); softcap > 0) {
    Value cap = g.scalarOf(node, element, softcap);
    capped = g.make<MulOp>(
        node, g.make<TanhOp>(node, g.make<DivOp>(node, scores, cap)), cap);
  }
  Value biased = bias ? g.make<AddOp>(node, capped, bias) : capped;
  Value probs = g.make<SoftmaxOp>(node, biased, 3);
  if (!probs)
    return failure();
  // A row with no key to attend: the spec's output is 0, where softmax
  // over -inf alone gives NaN. Guarded only where that can happen: a
  // constant bias with such a row, or a runtime mask.
  if (masked) {
    std::optional<HostTensor> known = g.constantValue(bias);
    if (!known || hasFullyMaskedRow(*known)) {
      OpBuilder &b = g.builder();
      Value rowMax = g.make<ReduceMaxOp>(
          node, bias, b.getDenseI64ArrayAttr({typeOf(bias).getRank() - 1}),
          b.getBoolAttr(true));
      Value none = g.make<IsInfOp>(node, rowMax, true, false);
      probs = g.make<WhereOp>(node, none, g.scalarOf(node, element, 0), probs);
    }
  }
  Value y = g.make<MatMulOp>(node, probs, values);
  if (y && rank == 3)
    y = mergeHeads(g, node, y);
  if (!y)
    return failure();
  g.bind(node, 0, y);
  if (g.used(node, 3)) {
    // qk_matmul_output_mode: 0 the scaled q k^T, 1 after the softcap, 2
    // with the bias, 3 the softmax.
    int64_t mode = g.attrInt(node, "qk_matmul_output_mode");
    Value stages[] = {scores, capped, biased, probs};
    if (mode < 0 || mode > 3)
      return g.error(node) << "qk_matmul_output_mode " << mode
                           << " is not 0, 1, 2 or 3";
    g.bind(node, 3, stages[mode]);
  }
  return success();
}

} // namespace

void weft::registerTransformerConverters(ConverterMap &map) {
  map["RotaryEmbedding"] = convertRotaryEmbedding;
  map["Attention"] = convertAttention;
}
