//===- FuseRotary.cpp - weft-fuse-rotary: rotary embeddings into one op ---===//
//
// Hugging Face's apply_rotary_pos_emb (Llama, Mistral, Qwen2, GPT-NeoX)
// exports as q * cos + rotate_half(q) * sin with rotate_half(x) =
// cat(-x[.., D/2:], x[.., :D/2]): two slices, a neg, a concat, two
// products and a sum, each a pass over q (and again in the backward,
// where the slices' gradients are pads). weft.rotary does it in one, its
// backward in one more, and keeps nothing: the tables are constants.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/ParameterReach.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace weft {
#define GEN_PASS_DEF_FUSEROTARY
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Whether `v` is computed from constants, frozen buffers and inputs
/// alone: no parameter reaches it, so the fused op owes it no gradient.
bool isTable(Value v) { return !parameterReaching(v); }

/// `v` as a slice of the last dim [start, end) with `step` of x, the rest
/// whole.
std::optional<std::pair<int64_t, int64_t>> lastDimSlice(Value v, Value &x,
                                                        int64_t step = 1) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice || !v.hasOneUse())
    return std::nullopt;
  ArrayRef<int64_t> shape = slice.getInput().getType().getShape();
  int64_t last = int64_t(shape.size()) - 1;
  for (int64_t d = 0; d <= last; ++d) {
    if (slice.getSteps()[d] != (d == last ? step : 1))
      return std::nullopt;
    if (d < last &&
        (slice.getStarts()[d] != 0 || slice.getEnds()[d] < shape[d]))
      return std::nullopt;
  }
  x = slice.getInput();
  return std::pair{slice.getStarts()[last],
                   std::min(slice.getEnds()[last], shape[last])};
}

/// x when `v` is rotate_half(x) = cat(-x[.., D/2:], x[.., :D/2]).
Value rotatedHalf(Value v) {
  auto cat = v.getDefiningOp<ConcatOp>();
  if (!cat || !v.hasOneUse() || cat.getInputs().size() != 2)
    return {};
  auto type = cast<RankedTensorType>(cat.getType());
  int64_t rank = type.getRank(), d = type.getDimSize(rank - 1);
  auto axis = static_cast<int64_t>(cat.getAxis()); // an I64Attr, as uint64_t
  if (axis != rank - 1 && axis != -1)
    return {};
  auto neg = cat.getInputs()[0].getDefiningOp<NegOp>();
  if (!neg || !neg->hasOneUse())
    return {};
  Value hiOf, loOf;
  auto hi = lastDimSlice(neg.getInput(), hiOf);
  auto lo = lastDimSlice(cat.getInputs()[1], loOf);
  if (!hi || !lo || hiOf != loOf || d % 2 ||
      *hi != std::pair<int64_t, int64_t>{d / 2, d} ||
      *lo != std::pair<int64_t, int64_t>{0, d / 2})
    return {};
  return hiOf;
}

/// x when `v` is GPT-J's rotate_every_two(x) = stack((-x[.., 1::2],
/// x[.., ::2]), -1).flatten(-2): the pairs' (-x[2i+1], x[2i]).
Value rotatedPairs(Value v) {
  auto flat = v.getDefiningOp<ReshapeOp>();
  auto cat = flat ? flat.getInput().getDefiningOp<ConcatOp>() : nullptr;
  if (!cat || !v.hasOneUse() || !cat->hasOneUse() ||
      cat.getInputs().size() != 2)
    return {};
  auto type = cast<RankedTensorType>(flat.getType());
  auto stacked = cast<RankedTensorType>(cat.getType());
  int64_t rank = type.getRank(), d = type.getDimSize(rank - 1);
  // [.., D/2, 2] -> [.., D], stacked along the new last dim.
  if (stacked.getRank() != rank + 1 ||
      static_cast<int64_t>(cat.getAxis()) != rank ||
      stacked.getDimSize(rank) != 2 || stacked.getDimSize(rank - 1) * 2 != d ||
      stacked.getShape().drop_back(2) != type.getShape().drop_back(1))
    return {};
  // Each half unsqueezed at the end: [.., D/2] -> [.., D/2, 1].
  auto unsqueezed = [&](Value x) -> Value {
    auto r = x.getDefiningOp<ReshapeOp>();
    if (!r || !x.hasOneUse() ||
        r.getInput().getType().getShape() != r.getType().getShape().drop_back())
      return {};
    return r.getInput();
  };
  Value negated = unsqueezed(cat.getInputs()[0]),
        kept = unsqueezed(cat.getInputs()[1]);
  auto neg = negated ? negated.getDefiningOp<NegOp>() : nullptr;
  if (!neg || !neg->hasOneUse() || !kept)
    return {};
  Value oddOf, evenOf;
  auto odd = lastDimSlice(neg.getInput(), oddOf, 2);
  auto even = lastDimSlice(kept, evenOf, 2);
  if (!odd || !even || oddOf != evenOf || d % 2 || odd->first != 1 ||
      even->first != 0 || odd->second < d - 1 || even->second < d - 1)
    return {};
  return oddOf;
}

/// (x, the table) when `v` is x * table or table * x, used once.
std::optional<std::pair<Value, Value>> product(Value v) {
  auto mul = v.getDefiningOp<MulOp>();
  if (!mul || !v.hasOneUse())
    return std::nullopt;
  return std::pair{mul.getLhs(), mul.getRhs()};
}

struct FuseRotaryPass : weft::impl::FuseRotaryBase<FuseRotaryPass> {
  void runOnOperation() override {
    SmallVector<AddOp> sums;
    getOperation().walk([&](AddOp op) { sums.push_back(op); });
    for (AddOp sum : sums)
      fuse(sum);
  }

  void fuse(AddOp sum) {
    for (auto [first, second] : {std::pair{sum.getLhs(), sum.getRhs()},
                                 std::pair{sum.getRhs(), sum.getLhs()}}) {
      auto plain = product(first), rotated = product(second);
      if (!plain || !rotated)
        continue;
      for (auto [x, cos] : {*plain, std::pair{plain->second, plain->first}})
        for (auto [r, sin] :
             {*rotated, std::pair{rotated->second, rotated->first}}) {
          bool interleaved = false;
          if (rotatedHalf(r) != x) {
            if (rotatedPairs(r) != x)
              continue;
            interleaved = true;
          }
          if (!x || x.getType() != sum.getType() ||
              cos.getType() != sin.getType() || !isTable(cos) || !isTable(sin))
            continue;
          rewrite(sum, x, cos, sin, r, interleaved);
          return;
        }
    }
  }

  void rewrite(AddOp sum, Value x, Value cos, Value sin, Value rotated,
               bool interleaved) {
    OpBuilder b(sum);
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    auto rotary = RotaryOp::create(b, sum.getLoc(), x, cos, sin,
                                   b.getI64IntegerAttr(rank - 1),
                                   b.getBoolAttr(interleaved));
    Operation *plain = sum.getLhs().getDefiningOp(),
              *twisted = sum.getRhs().getDefiningOp();
    // The rotation's ops (reshapes, concat, neg, slices), each used by the
    // chain alone (the matchers checked), from its result up to x: users
    // before producers.
    SmallVector<Operation *> chain;
    SmallVector<Value> work{rotated};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || v == x || llvm::is_contained(chain, def) ||
          !isa<ReshapeOp, ConcatOp, NegOp, SliceOp>(def))
        continue;
      chain.push_back(def);
      work.append(def->getOperands().begin(), def->getOperands().end());
    }
    sum.replaceAllUsesWith(rotary.getOutput());
    sum.erase();
    plain->erase();
    twisted->erase();
    for (Operation *op : chain)
      op->erase();
  }
};

} // namespace
