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

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

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
bool isTable(Value v) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func || func.getArgAttr(arg.getArgNumber(), kParamAttr))
        return false;
      continue;
    }
    Operation *def = x.getDefiningOp();
    work.append(def->getOperands().begin(), def->getOperands().end());
  }
  return true;
}

/// `v` as a slice of the last dim [start, end) of x, the rest whole.
std::optional<std::pair<int64_t, int64_t>> lastDimSlice(Value v, Value &x) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice || !v.hasOneUse())
    return std::nullopt;
  ArrayRef<int64_t> shape = slice.getInput().getType().getShape();
  int64_t last = int64_t(shape.size()) - 1;
  for (int64_t d = 0; d <= last; ++d) {
    if (slice.getSteps()[d] != 1)
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
  if (cat.getAxis() != rank - 1 && cat.getAxis() != -1)
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
          if (rotatedHalf(r) != x || !x || x.getType() != sum.getType() ||
              cos.getType() != sin.getType() || !isTable(cos) || !isTable(sin))
            continue;
          rewrite(sum, x, cos, sin, r);
          return;
        }
    }
  }

  void rewrite(AddOp sum, Value x, Value cos, Value sin, Value rotated) {
    OpBuilder b(sum);
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    auto rotary =
        RotaryOp::create(b, sum.getLoc(), x, cos, sin,
                         b.getI64IntegerAttr(rank - 1), b.getBoolAttr(false));
    Operation *plain = sum.getLhs().getDefiningOp(),
              *twisted = sum.getRhs().getDefiningOp();
    auto cat = rotated.getDefiningOp<ConcatOp>();
    Operation *neg = cat.getInputs()[0].getDefiningOp(),
              *lo = cat.getInputs()[1].getDefiningOp();
    Operation *hi = neg->getOperand(0).getDefiningOp();
    sum.replaceAllUsesWith(rotary.getOutput());
    // Users before producers.
    for (Operation *op :
         {(Operation *)sum, plain, twisted, (Operation *)cat, neg, lo, hi})
      op->erase();
  }
};

} // namespace
