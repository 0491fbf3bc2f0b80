//===- FuseAttention.cpp - weft-fuse-attention: core attention, one op ----===//
//
// Exporters write core attention as ops: q k^T, a scale, a mask, softmax,
// a dropout, x v. Differentiated as they stand they keep the [.., Sq, Sk]
// scores, probabilities and dropout mask for the backward (Megatron's
// 5 a s^2 b bytes per layer); weft.attention keeps one f32 per query row
// and its gradient recomputes the rest (FlashAttention). The match reads
// from each softmax, as weft-checkpoint's selective recompute does, but
// only what the fused kernel computes exactly: a scalar scale (on the
// scores, or split over q and k^T as torch's scaled_dot_product_attention
// decomposition writes it), a causal mask, an additive mask of zeros
// (none), any other additive mask the same for every head that no
// parameter reaches (a padding mask, a sliding window: the op's bias), one
// dropout, torch's NaN guard after the softmax; anything else stays
// unfused, with a warning naming why. Grouped-query attention's k and v,
// repeated to every query head by Hugging Face's repeat_kv, are read as the kv
// heads themselves: the copies are not made.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/ParameterReach.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace weft {
#define GEN_PASS_DEF_FUSEATTENTION
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// A fill at or below this zeroes a probability in every float type weft
/// computes softmax in (exp(-1e4) underflows f32); exporters write -inf,
/// Hugging Face the dtype's lowest value.
constexpr double kMaskedFill = -1.0e4;

/// transformers 4.x's Llama and OPT clamp the masked scores at the dtype's
/// lowest, max(s, finfo.min): at or below this only a masked score is
/// changed, and it stays one (exp underflows to 0 either way).
constexpr double kClampFill = -1.0e30;

/// The value of a scalar (or splat) float computed from constants only: a
/// constant, or arithmetic on such values. Exporters compute the scale at
/// run time as often as they fold it: Hugging Face's GPT-2 divides by
/// torch.full([], d ** 0.5), which exports as 0 + pow(d, 0.5).
std::optional<double> splatValue(Value v, int depth = 0) {
  ElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (!isa<FloatType>(attr.getElementType()) || !attr.isSplat())
      return std::nullopt;
    return attr.getSplatValue<APFloat>().convertToDouble();
  }
  Operation *def = v.getDefiningOp();
  if (!def || depth > 8)
    return std::nullopt;
  SmallVector<double, 2> x;
  for (Value operand : def->getOperands()) {
    std::optional<double> value = splatValue(operand, depth + 1);
    if (!value)
      return std::nullopt;
    x.push_back(*value);
  }
  if (isa<CastOp>(def) && isa<FloatType>(getElementTypeOrSelf(v)))
    return x[0];
  if (isa<SqrtOp>(def))
    return std::sqrt(x[0]);
  if (isa<AddOp>(def))
    return x[0] + x[1];
  if (isa<SubOp>(def))
    return x[0] - x[1];
  if (isa<MulOp>(def))
    return x[0] * x[1];
  if (isa<DivOp>(def))
    return x[0] / x[1];
  if (isa<PowOp>(def))
    return std::pow(x[0], x[1]);
  return std::nullopt;
}

/// Whether `op` is a cast to its operand's own type (exporters write them
/// around softmax: Hugging Face's `.to(dtype)`).
bool isIdentityCast(Operation *op) {
  return isa<CastOp>(op) &&
         op->getOperand(0).getType() == op->getResult(0).getType();
}

/// A constant seen through identity casts and unit-step slices: the
/// importer folds constant slices only up to kMaxFoldElements, so a
/// 1024 x 1024 mask arrives as constant -> slice -> slice -> cast.
struct ConstantView {
  ElementsAttr attr;
  /// Where the view starts, per dim of the constant.
  SmallVector<int64_t> offsets;
};

std::optional<ConstantView> viewConstant(Value v) {
  SmallVector<int64_t> offsets(cast<RankedTensorType>(v.getType()).getRank(),
                               0);
  while (true) {
    ElementsAttr attr;
    if (matchPattern(v, m_Constant(&attr)))
      return ConstantView{attr, offsets};
    Operation *def = v.getDefiningOp();
    if (def && isIdentityCast(def)) {
      v = def->getOperand(0);
    } else if (auto slice = dyn_cast_or_null<SliceOp>(def)) {
      if (llvm::any_of(slice.getSteps(), [](int64_t s) { return s != 1; }))
        return std::nullopt;
      for (auto [offset, start] : llvm::zip(offsets, slice.getStarts()))
        offset += start;
      v = slice.getInput();
    } else {
      return std::nullopt;
    }
  }
}

/// isTriangle's element check of the constant view `view` seen as `type`.
template <typename T, typename Agrees>
bool isTriangleOf(const ConstantView &view, RankedTensorType type,
                  Agrees agrees) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!view.attr.getElementType().isInteger(1))
      return false;
  } else if (!isa<FloatType>(view.attr.getElementType())) {
    return false;
  }
  auto values = view.attr.tryGetValues<T>();
  if (!values)
    return false;
  // Row-major strides of the constant; the view's element at `index` is
  // the constant's at index + offsets.
  ArrayRef<int64_t> shape = type.getShape();
  auto full = cast<ShapedType>(view.attr.getType()).getShape();
  SmallVector<int64_t> strides(full.size(), 1);
  for (int64_t d = full.size() - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * full[d + 1];
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t e = 0, n = type.getNumElements(); e < n; ++e) {
    int64_t at = 0;
    for (auto [i, offset, stride] : llvm::zip(index, view.offsets, strides))
      at += (i + offset) * stride;
    int64_t i = index[shape.size() - 2], j = index.back();
    if (!agrees(T(values->begin()[at]), j > i))
      return false;
    for (int64_t d = shape.size() - 1; d >= 0 && ++index[d] == shape[d]; --d)
      index[d] = 0;
  }
  return true;
}

/// Masks already checked in one run of the pass, by what they are a view
/// of and the check: a model's layers share one mask constant (identical
/// constants are one attribute), and checking a 2048 x 2048 mask element
/// by element for each of 96 layers took seconds.
using MaskKey =
    std::tuple<const void *, std::vector<int64_t>, std::vector<int64_t>, int>;
using MaskChecks = std::map<MaskKey, bool>;

/// Whether `v` is a constant (or a view of one) [.., n, n] (n = sq = sk)
/// of element type T whose every element agrees with its place:
/// `agrees(value, j > i)` for the element at row i, column j of its
/// trailing matrix. `check` names the test `agrees` makes, for `checks`.
template <typename T, typename Agrees>
bool isTriangle(Value v, int64_t sq, int64_t sk, Agrees agrees, int check,
                MaskChecks &checks) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() < 2 || sq != sk ||
      type.getShape().drop_back().back() != sq || type.getShape().back() != sk)
    return false;
  std::optional<ConstantView> view = viewConstant(v);
  if (!view)
    return false;
  MaskKey key{
      view->attr.getAsOpaquePointer(),
      std::vector<int64_t>(view->offsets.begin(), view->offsets.end()),
      std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
      check};
  if (auto it = checks.find(key); it != checks.end())
    return it->second;
  return checks[key] = isTriangleOf<T>(*view, type, agrees);
}

/// Whether `v` is a constant causal mask of [.., sq, sk] scores: true above
/// the diagonal (`future`: what masked_fill hides) or on and below it.
bool isCausalMask(Value v, int64_t sq, int64_t sk, bool future,
                  MaskChecks &checks) {
  return isTriangle<bool>(
      v, sq, sk,
      [&](bool bit, bool isFuture) {
        return bit == (future ? isFuture : !isFuture);
      },
      future ? 1 : 0, checks);
}

/// Whether `v` is a constant additive causal mask: 0 on and below the
/// diagonal, a masking fill above it.
bool isAdditiveCausalMask(Value v, int64_t sq, int64_t sk, MaskChecks &checks) {
  return isTriangle<APFloat>(
      v, sq, sk,
      [](const APFloat &x, bool isFuture) {
        double d = x.convertToDouble();
        return isFuture ? d <= kMaskedFill : d == 0.0;
      },
      2, checks);
}

/// Whether `v` is a constant (or a view of one) all of whose elements are
/// 0: an additive mask that hides nothing (Hugging Face's BERT builds one
/// from an attention mask of ones).
bool isZeroMask(Value v) {
  std::optional<ConstantView> view = viewConstant(v);
  if (!view || !isa<FloatType>(view->attr.getElementType()))
    return false;
  auto values = view->attr.tryGetValues<APFloat>();
  return values &&
         llvm::all_of(*values, [](const APFloat &x) { return x.isZero(); });
}

/// Why additive mask `mask` on scores of rank `rank` cannot be the fused
/// op's bias (empty when it can): one mask only, the same for every head
/// (its head dim, and any leading dim but a rank-4 score's batch, 1:
/// tensor parallelism splits heads), and no parameter reaching it (the op
/// takes no gradient for its bias).
std::string biasRefusal(Value mask, Value existing, int64_t rank) {
  if (existing)
    return "it adds two masks to its scores";
  ArrayRef<int64_t> shape = cast<RankedTensorType>(mask.getType()).getShape();
  int64_t offset = rank - int64_t(shape.size());
  for (int64_t d = std::max<int64_t>(offset, 0); d < rank - 2; ++d)
    if (shape[d - offset] != 1 && !(rank == 4 && d == 0))
      return "its additive mask varies by head (a per-head bias has no fused "
             "form)";
  if (StringAttr param = parameterReaching(mask))
    return "its additive mask depends on parameter '" + param.str() +
           "' (a learned bias: the fused op takes no gradient for its bias)";
  return "";
}

/// A matmul reading an operand transposed (transA/transB: weft's, never
/// an import's); attention's are plain.
bool readsTransposed(MatMulOp mm) { return mm.getTransA() || mm.getTransB(); }

/// One core attention the fused op computes.
struct Attention {
  MatMulOp qk, pv;
  SoftmaxOp softmax;
  DropoutOp dropout;
  /// The identity casts and the dropout between the softmax and attention
  /// x V, in order.
  SmallVector<Operation *> between;
  /// Between q k^T and the softmax, in program order, each with its
  /// operand that carries the scores.
  SmallVector<std::pair<Operation *, Value>> scoreOps;
  /// q and k^T as q k^T reads them, less scalings by constants (torch's
  /// scaled_dot_product_attention decomposition scales each by
  /// sqrt(scale)); those muls, folded into `scale`, are in `operandScales`.
  Value q, kT;
  SmallVector<Operation *> operandScales;
  double scale = 1.0;
  bool causal = false;
  /// An additive mask other than a causal or all-zero one: the op's bias.
  Value bias;
  /// torch's guard after the softmax, where(isnan(p), 0, p), for rows a
  /// mask hides wholly: the fused op gives such a row 0 itself.
  bool nanGuard = false;
};

/// `x` less a multiplication by a constant splat used only here, the
/// factor multiplied into `scale` and the mul recorded in `muls`.
Value unscaled(Value x, double &scale, SmallVectorImpl<Operation *> &muls) {
  auto mul = x.getDefiningOp<MulOp>();
  if (!mul || !x.hasOneUse() || mul.getLhs().getType() != x.getType())
    return x;
  std::optional<double> factor = splatValue(mul.getRhs());
  if (!factor)
    return x;
  scale *= *factor;
  muls.push_back(mul);
  return mul.getLhs();
}

/// Whether `user` of probabilities `p` is torch's NaN guard
/// where(isnan(p), 0, p), its is_nan read by it alone.
bool isNanGuard(Operation *user, Value p) {
  auto where = dyn_cast<WhereOp>(user);
  auto isNaN = where ? where.getCondition().getDefiningOp<IsNaNOp>() : nullptr;
  std::optional<double> zero = where ? splatValue(where.getX()) : std::nullopt;
  return isNaN && isNaN.getInput() == p && isNaN->hasOneUse() &&
         where.getY() == p && zero && *zero == 0.0;
}

/// Matches the attention around `softmax`. Returns std::nullopt silently
/// for a softmax that is not between two matmuls; otherwise the match or
/// (in `why`) the reason it does not fuse.
std::optional<Attention> match(SoftmaxOp softmax, std::string &why,
                               MaskChecks &checks) {
  Attention a;
  a.softmax = softmax;
  auto scores = cast<RankedTensorType>(softmax.getType());
  int64_t rank = scores.getRank();
  // Forwards: an optional dropout, then probabilities x v (identity casts
  // anywhere between).
  Value probs = softmax.getResult();
  // torch's NaN guard right after the softmax: p read by is_nan and where.
  if (!probs.hasOneUse() && llvm::range_size(probs.getUsers()) == 2)
    for (Operation *user : probs.getUsers())
      if (isNanGuard(user, probs)) {
        auto where = cast<WhereOp>(user);
        a.between.push_back(where.getCondition().getDefiningOp());
        a.between.push_back(where);
        a.nanGuard = true;
        probs = where.getResult();
        break;
      }
  while (probs.hasOneUse()) {
    Operation *user = *probs.getUsers().begin();
    if (auto dropout = dyn_cast<DropoutOp>(user); dropout && !a.dropout)
      a.dropout = dropout;
    else if (!isIdentityCast(user))
      break;
    a.between.push_back(user);
    probs = user->getResult(0);
  }
  if (!probs.hasOneUse())
    return std::nullopt;
  a.pv = dyn_cast<MatMulOp>(*probs.getUsers().begin());
  if (!a.pv || a.pv.getLhs() != probs || readsTransposed(a.pv))
    return std::nullopt;
  // Backwards: scale and mask ops on the scores, to q k^T.
  Value v = softmax.getInput();
  while (Operation *def = v.getDefiningOp()) {
    if ((a.qk = dyn_cast<MatMulOp>(def)))
      break;
    if (!isa<MulOp, DivOp, WhereOp, AddOp, MaxOp>(def) && !isIdentityCast(def))
      return std::nullopt;
    // The operand carrying the scores: the scores' type, not a constant.
    Value carried;
    for (Value operand : def->getOperands())
      if (operand.getType() == scores && !matchPattern(operand, m_Constant()))
        carried = operand;
    if (!carried)
      return std::nullopt;
    a.scoreOps.insert(a.scoreOps.begin(), {def, carried});
    v = carried;
  }
  if (!a.qk || readsTransposed(a.qk))
    return std::nullopt;
  a.q = unscaled(a.qk.getLhs(), a.scale, a.operandScales);
  a.kT = unscaled(a.qk.getRhs(), a.scale, a.operandScales);
  // From here on it is core attention: say why it does not fuse.
  int64_t sq = scores.getDimSize(rank - 2), sk = scores.getDimSize(rank - 1);
  if (int64_t(softmax.getAxis()) != rank - 1) {
    why = "its softmax is not over the keys (the last dim)";
    return std::nullopt;
  }
  for (auto [op, carried] : a.scoreOps) {
    if (!op->getResult(0).hasOneUse()) {
      why = "a score the softmax reads is used elsewhere";
      return std::nullopt;
    }
    if (isIdentityCast(op))
      continue;
    // The operand besides the scores (for a where, besides the condition).
    Value other = op->getOperand(op->getNumOperands() - 1) == carried
                      ? op->getOperand(op->getNumOperands() - 2)
                      : op->getOperand(op->getNumOperands() - 1);
    if (auto mul = dyn_cast<MulOp>(op); mul && splatValue(other)) {
      a.scale *= *splatValue(other);
    } else if (auto div = dyn_cast<DivOp>(op);
               div && div.getRhs() == other && splatValue(other)) {
      a.scale /= *splatValue(other);
    } else if (auto where = dyn_cast<WhereOp>(op)) {
      // masked_fill(future, fill): where(future, fill, scores), or the
      // complement where(past, scores, fill).
      bool fillFirst = where.getX() == other;
      std::optional<double> fill = splatValue(other);
      if (!fill || !(*fill <= kMaskedFill) ||
          !isCausalMask(where.getCondition(), sq, sk, fillFirst, checks)) {
        why = "its mask is not causal (a constant triangle filled with "
              "-inf)";
        return std::nullopt;
      }
      a.causal = true;
    } else if (isa<AddOp>(op) && isAdditiveCausalMask(other, sq, sk, checks)) {
      a.causal = true;
    } else if (isa<AddOp>(op) && isZeroMask(other)) {
      continue; // hides nothing: no mask
    } else if (isa<MaxOp>(op) && splatValue(other) &&
               *splatValue(other) <= kClampFill) {
      continue; // transformers 4's clamp of masked scores: the identity
                // on every score a mask does not push below it
    } else if (isa<AddOp>(op)) {
      why = biasRefusal(other, a.bias, rank);
      if (!why.empty())
        return std::nullopt;
      a.bias = other;
    } else {
      why = "'" + op->getName().getStringRef().str() +
            "' on its scores is neither a scalar scale nor a causal mask";
      return std::nullopt;
    }
  }
  if (!a.qk.getResult().hasOneUse()) {
    why = "q k^T is used elsewhere";
    return std::nullopt;
  }
  if (!(a.scale > 0.0) || !std::isfinite(a.scale)) {
    why = "its scale is not a positive finite number";
    return std::nullopt;
  }
  // q [.., Sq, D] x k^T [.., D, Sk] and probs x v [.., Sk, Dv]: one rank,
  // the scores' leading dims, no broadcasting.
  auto sameBatch = [&](Value x) {
    auto t = cast<RankedTensorType>(x.getType());
    return t.getRank() == rank &&
           t.getShape().drop_back(2) == scores.getShape().drop_back(2);
  };
  if (!sameBatch(a.q) || !sameBatch(a.kT) || !sameBatch(a.pv.getRhs())) {
    why = "q, k and v do not all have the scores' batch and head dims";
    return std::nullopt;
  }
  // The fused op draws its mask where attention x V was: no other dropout
  // may sit between, or the micro-batch's dropout numbering would change.
  if (a.dropout)
    for (Operation *op = a.dropout->getNextNode(); op != a.pv;
         op = op->getNextNode())
      if (isa<DropoutOp, AttentionOp>(op)) {
        why = "another dropout runs between its dropout and attention x V";
        return std::nullopt;
      }
  return a;
}

/// k from q k^T's right operand k^T: a transpose of the last two dims. When
/// k^T is itself a transpose of x (torch exports k.transpose(1, 2)
/// .transpose(-2, -1) as one [0, 2, 3, 1]), the two compose into one
/// transpose of x, or none: a transpose is a copy, kept for the backward.
Value keysOf(OpBuilder &b, Value kT) {
  int64_t rank = cast<RankedTensorType>(kT.getType()).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 2], perm[rank - 1]);
  Value x = kT;
  if (auto t = kT.getDefiningOp<TransposeOp>()) {
    // Result dim i of transpose(transpose(x, p), s) is x's dim p[s[i]].
    for (int64_t &d : perm)
      d = t.getPerm()[d];
    x = t.getInput();
  }
  if (llvm::equal(perm, llvm::seq<int64_t>(0, rank)))
    return x;
  return TransposeOp::create(b, kT.getLoc(), x, perm);
}

/// The kv heads x holds Hugging Face's repeat_kv copies of: y [B, Hkv, S,
/// D] for x = reshape(expand(reshape(y) to [B, Hkv, 1, S, D]) to [B, Hkv,
/// G, S, D]) to [B, Hkv G, S, D] (x[:, :, None].expand(..).reshape(..));
/// else null.
Value repeatedKv(Value x) {
  auto merge = x.getDefiningOp<ReshapeOp>();
  auto expand = merge ? merge.getInput().getDefiningOp<ExpandOp>() : nullptr;
  auto unsqueeze =
      expand ? expand.getInput().getDefiningOp<ReshapeOp>() : nullptr;
  if (!unsqueeze)
    return {};
  Value y = unsqueeze.getInput();
  ArrayRef<int64_t> ys = cast<RankedTensorType>(y.getType()).getShape(),
                    us = unsqueeze.getType().getShape(),
                    es = expand.getType().getShape(),
                    xs = merge.getType().getShape();
  if (ys.size() != 4 || us.size() != 5 || es.size() != 5)
    return {};
  int64_t group = es[2];
  SmallVector<int64_t> unsqueezed{ys[0], ys[1], 1, ys[2], ys[3]},
      expanded{ys[0], ys[1], group, ys[2], ys[3]},
      merged{ys[0], ys[1] * group, ys[2], ys[3]};
  if (us != ArrayRef(unsqueezed) || es != ArrayRef(expanded) ||
      xs != ArrayRef(merged))
    return {};
  return y;
}

void fuse(Attention a) {
  OpBuilder b(a.pv);
  Value k = keysOf(b, a.kT), v = a.pv.getRhs();
  // Grouped-query attention: the op reads the kv heads themselves, each
  // for its group of query heads, instead of repeat_kv's copies (k and v
  // alike, or neither).
  if (Value k0 = repeatedKv(k), v0 = repeatedKv(v);
      k0 && v0 &&
      cast<RankedTensorType>(k0.getType()).getDimSize(1) ==
          cast<RankedTensorType>(v0.getType()).getDimSize(1)) {
    k = k0;
    v = v0;
  }
  FloatAttr ratio, seed;
  if (a.dropout) {
    double p =
        a.dropout.getTraining() ? a.dropout.getRatio().convertToDouble() : 0.0;
    ratio = b.getF64FloatAttr(p);
  }
  // The bias at the scores' rank (leading 1s), as the op reads it.
  Value bias = a.bias;
  if (bias) {
    auto scores = cast<RankedTensorType>(a.softmax.getType());
    auto type = cast<RankedTensorType>(bias.getType());
    if (type.getRank() < scores.getRank()) {
      SmallVector<int64_t> shape(scores.getRank() - type.getRank(), 1);
      llvm::append_range(shape, type.getShape());
      bias = ReshapeOp::create(b, a.pv.getLoc(), bias, shape);
    }
  }
  auto op = AttentionOp::create(
      b, a.pv.getLoc(), a.q, k, v, bias, b.getF64FloatAttr(a.scale),
      b.getBoolAttr(a.causal), ratio,
      a.dropout ? a.dropout.getSeedAttr() : IntegerAttr(), StringAttr());
  a.pv.getResult().replaceAllUsesWith(op.getOutput());
  // The matched ops, users before producers.
  SmallVector<Operation *> dead{a.pv};
  dead.append(a.between.rbegin(), a.between.rend());
  dead.push_back(a.softmax);
  for (auto it = a.scoreOps.rbegin(); it != a.scoreOps.rend(); ++it)
    dead.push_back(it->first);
  dead.push_back(a.qk);
  dead.append(a.operandScales.begin(), a.operandScales.end());
  // What only they used dies with them: the constants (scale, mask, fill),
  // k's transpose, a scale computed from constants.
  llvm::SmallPtrSet<Operation *, 8> matched(dead.begin(), dead.end());
  llvm::SetVector<Operation *> candidates;
  auto consider = [&](Operation *op) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && !matched.count(def))
        candidates.insert(def);
  };
  for (Operation *op : dead) {
    consider(op);
    op->erase();
  }
  while (!candidates.empty()) {
    Operation *op = candidates.pop_back_val();
    if (!op->use_empty() || !isPure(op))
      continue;
    consider(op);
    op->erase();
  }
}

struct FuseAttentionPass : weft::impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    MaskChecks checks;
    for (SoftmaxOp softmax : softmaxes) {
      std::string why;
      if (std::optional<Attention> a = match(softmax, why, checks))
        fuse(*a);
      else if (!why.empty())
        softmax.emitWarning("core attention not fused (--flash-attention): ")
            << why;
    }
  }
};

} // namespace
