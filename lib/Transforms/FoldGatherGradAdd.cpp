//===- FoldGatherGradAdd.cpp - weft-fold-gather-grad-add ------------------===//
//
// An embedding table's gradient (gather_grad) is a zero-filled [V, h] table
// with the gathered rows' gradients added in. When the table has another
// gradient too (a tied LM head's GEMM; another micro-batch's embedding
// gradient), an add reads both tables and writes a third: for GPT-2's
// 50257-row vocabulary that fill and add are 4 passes over a 100 MB table
// per micro-batch, to change the few thousand rows a batch's tokens name.
// Scattering the rows straight into the other gradient, in place, touches
// only those rows. Each row's sum is rounded to the table's type before it
// is added, as the add saw it, so the fold does not change a bit. A
// vocabulary-parallel table's shard (tensor parallelism) folds alike.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace weft {
#define GEN_PASS_DEF_FOLDGATHERGRADADD
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Whether `v`'s bytes may be written over by the add that is its only
/// reader: they are an op's (through views, each read once, and through
/// in-place updates, which were their last readers), never a function
/// argument's or a constant's (which every step reads). FoldLossGrad's
/// onlyReadBy asks the same of a loss's scores but refuses received and
/// updated bytes, which an add's operand may well be (a pipeline's tied
/// head gradient arrives by wait_recv).
bool writable(Value v) {
  bool views = true; // every alias so far a view: its readers count
  while (true) {
    auto result = dyn_cast<OpResult>(v);
    if (!result || (views && !v.hasOneUse()))
      return false;
    Operation *op = result.getOwner();
    std::optional<unsigned> alias =
        aliasedOperand(op, result.getResultNumber());
    if (!alias)
      return !isa<ConstantOp>(op);
    views &= isView(op);
    v = op->getOperand(*alias);
  }
}

/// Whether `op` is a scatter-add of an embedding's gradient not yet
/// accumulating into a sum: gather_grad, or a vocabulary-parallel shard's
/// (a tied head's gradient is the shard's too under tensor parallelism).
bool isPlainScatter(Operation *op) {
  if (auto gather = dyn_cast<GatherGradOp>(op))
    return !gather.getAccumulate();
  if (auto shard = dyn_cast<VocabParallelGatherGradOp>(op))
    return !shard.getAccumulate();
  return false;
}

/// `scatter` (isPlainScatter) accumulating into `sum`.
void accumulateInto(Operation *scatter, Value sum) {
  if (auto gather = dyn_cast<GatherGradOp>(scatter))
    return gather.getAccumulateMutable().assign(sum);
  cast<VocabParallelGatherGradOp>(scatter).getAccumulateMutable().assign(sum);
}

/// The plain scatter whose result is `v`, if `v` is read only by the add
/// `add` and both are on one stage; null otherwise.
Operation *foldable(Value v, AddOp add) {
  Operation *scatter = v.getDefiningOp();
  if (!scatter || !isPlainScatter(scatter) || !v.hasOneUse() ||
      stageOf(scatter) != stageOf(add))
    return nullptr;
  return scatter;
}

/// `add(a, b)` of a scatter's table and another gradient of the same table
/// as the scatter accumulating into the other: at the scatter's place when
/// the other is computed before it (the rows' gradient is then read where
/// it was), else at the add's. False when the add broadcasts or neither
/// operand can be folded.
bool fold(AddOp add, DominanceInfo &dominance) {
  Value lhs = add.getLhs(), rhs = add.getRhs();
  if (lhs == rhs || lhs.getType() != add.getType() ||
      rhs.getType() != add.getType())
    return false;
  // (the scatter, the sum it writes into), of either operand.
  SmallVector<std::pair<Operation *, Value>, 2> candidates;
  for (auto [mine, other] : {std::pair{rhs, lhs}, {lhs, rhs}})
    if (Operation *scatter = foldable(mine, add); scatter && writable(other))
      candidates.push_back({scatter, other});
  if (candidates.empty())
    return false;
  auto keepsPlace = [&](const auto &c) {
    return dominance.properlyDominates(c.second, c.first);
  };
  const auto *chosen = llvm::find_if(candidates, keepsPlace);
  bool early = chosen != candidates.end();
  auto [scatter, other] = early ? *chosen : candidates.front();
  OpBuilder b(early ? scatter : add.getOperation());
  Operation *fused = b.clone(*scatter);
  accumulateInto(fused, other);
  add.replaceAllUsesWith(fused->getResult(0));
  add.erase();
  scatter->erase();
  return true;
}

struct FoldGatherGradAddPass
    : weft::impl::FoldGatherGradAddBase<FoldGatherGradAddPass> {
  void runOnOperation() override {
    // In block order, so a chain of sums (a position embedding's over
    // micro-batches) folds link by link: each fused op is the next add's
    // other operand.
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp op) { adds.push_back(op); });
    DominanceInfo dominance(getOperation());
    for (AddOp add : adds)
      fold(add, dominance);
  }
};

} // namespace
