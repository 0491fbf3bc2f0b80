//===- HoistAccumulation.cpp - micro-batch sums by their terms ----------===//
//
// HoistAccumulation.h's hoistAccumulation, and weft-hoist-accumulation,
// the pass that runs it where weft-data-parallel does not (one replica).
//
//===----------------------------------------------------------------------===//

#include "HoistAccumulation.h"

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

namespace weft {
#define GEN_PASS_DEF_HOISTACCUMULATION
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The block's order while ops move up to right after others, answered
/// without the block: each move can use up the gap in MLIR's order indices
/// there and invalidate the whole block's order, and the next
/// isBeforeInBlock renumbers every op. A step of 192 micro-batches hoists
/// thousands of sums in a block of 10^5 ops: quadratic, minutes. Here ops
/// that never move keep their first positions; a moved op sits in the run
/// of moved ops behind its root (the unmoved op it was moved behind,
/// directly or behind another moved op), in the order the moves leave
/// them.
class HoistOrder {
public:
  explicit HoistOrder(Block &block) {
    int64_t i = 0;
    for (Operation &op : block)
      position[&op] = i++;
  }
  /// Whether `a` is before `b` now.
  bool before(Operation *a, Operation *b) const {
    Operation *ra = rootOf(a), *rb = rootOf(b);
    if (ra != rb)
      return position.lookup(ra) < position.lookup(rb);
    if (a == b || b == ra)
      return false;
    if (a == ra)
      return true;
    const SmallVector<Operation *> &run = behind.find(ra)->second;
    return llvm::find(run, a) < llvm::find(run, b);
  }
  /// The latest defining op of `values` now, constants aside (latestDef).
  Operation *latest(ValueRange values) const {
    Operation *result = nullptr;
    for (Value v : values) {
      Operation *def = v.getDefiningOp();
      if (def && !isa<ConstantOp>(def) && (!result || before(result, def)))
        result = def;
    }
    return result;
  }
  /// Moves `op` to right after `after`.
  void moveAfter(Operation *op, Operation *after) {
    op->moveAfter(after);
    place(op, after, /*offset=*/1);
  }
  /// Moves `op` to right before `at`, a moved op.
  void moveBefore(Operation *op, Operation *at) {
    op->moveBefore(at);
    place(op, at, /*offset=*/0);
  }

private:
  Operation *rootOf(Operation *op) const {
    return moved.lookup(op) ? moved.lookup(op) : op;
  }
  /// Records `op` at `anchor` (offset 0) or right after it (1).
  void place(Operation *op, Operation *anchor, int offset) {
    unplace(op);
    Operation *root = rootOf(anchor);
    SmallVector<Operation *> &run = behind[root];
    auto at = anchor == root ? run.begin() : llvm::find(run, anchor) + offset;
    run.insert(at, op);
    moved[op] = root;
  }
  void unplace(Operation *op) {
    if (Operation *root = moved.lookup(op)) {
      SmallVector<Operation *> &run = behind[root];
      run.erase(llvm::find(run, op));
    }
  }
  llvm::DenseMap<Operation *, int64_t> position;
  llvm::DenseMap<Operation *, Operation *> moved; ///< moved op -> its root
  llvm::DenseMap<Operation *, SmallVector<Operation *>> behind;
};

} // namespace

bool weft::isOptimizerStep(Operation *op) { return isa<SGDOp, AdamWOp>(op); }

llvm::SetVector<Operation *>
weft::hoistAccumulation(ArrayRef<Operation *> updates) {
  llvm::SetVector<Operation *> chain;
  SmallVector<Operation *> work;
  for (Operation *update : updates)
    if (Operation *def = update->getOperand(kGradOperand).getDefiningOp())
      work.push_back(def);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (microBatchOf(op) || !isa<AddOp, MulOp>(op) || !chain.insert(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        work.push_back(def);
  }
  if (chain.empty())
    return chain;
  HoistOrder order(*chain.front()->getBlock());
  SmallVector<Operation *> ordered(chain.begin(), chain.end());
  llvm::sort(ordered,
             [&](Operation *a, Operation *b) { return order.before(a, b); });
  for (Operation *op : ordered) {
    Operation *after = order.latest(op->getOperands());
    if (!after)
      continue;
    if (order.before(after, op)) {
      order.moveAfter(op, after);
      // A scale constant defined further down comes along.
      for (Value v : op->getOperands())
        if (auto constant = v.getDefiningOp<ConstantOp>();
            constant && order.before(op, constant))
          order.moveBefore(constant, op);
    }
    joinTask(op, after);
  }
  return chain;
}

namespace {

struct HoistAccumulationPass
    : weft::impl::HoistAccumulationBase<HoistAccumulationPass> {
  void runOnOperation() override {
    SmallVector<Operation *> updates;
    getOperation().walk([&](Operation *op) {
      if (isOptimizerStep(op))
        updates.push_back(op);
    });
    hoistAccumulation(updates);
  }
};

} // namespace
