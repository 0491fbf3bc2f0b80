//===- Checkpoint.cpp - weft-checkpoint: recompute in the backward --------===//
//
// Full activation recompute per (stage, micro-batch) region; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace weft {
#define GEN_PASS_DEF_CHECKPOINT
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

bool hasPhase(Operation *op, StringRef phase) {
  auto attr = op->getAttrOfType<StringAttr>(kPhaseAttr);
  return attr && attr.getValue() == phase;
}

bool isForward(Operation *op) { return !op->hasAttr(kPhaseAttr); }

/// Ops whose recomputation would be wrong or pointless.
bool recomputable(Operation *op) {
  if (isa<ConstantOp, IRecvOp, WaitRecvOp, ISendOp, WaitSendOp>(op))
    return false;
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    if (inPlaceOperand(op, r))
      return false; // training batch norm: running statistics in place
  return isPure(op) || isa<DropoutOp>(op);
}

struct CheckpointPass : weft::impl::CheckpointBase<CheckpointPass> {
  using CheckpointBase::CheckpointBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (policy == "none")
      return;
    if (policy != "full") {
      func.emitError("weft-checkpoint: unknown policy '")
          << policy << "' (expected none or full)";
      return signalPassFailure();
    }
    numberDropouts(func);
    recompute(func);
  }

  /// Dropout masks are keyed by rng_id: number the dropouts of each
  /// micro-batch in program order (the plan emitter's order) before clones
  /// appear, and let clones keep their original's id.
  void numberDropouts(func::FuncOp func) {
    std::map<int64_t, int64_t> next;
    Builder b(func.getContext());
    func.walk([&](DropoutOp op) {
      int64_t mb = microBatchOf(op).value_or(0);
      op->setAttr("weft.rng_id", b.getI64IntegerAttr(next[mb]++));
    });
  }

  void recompute(func::FuncOp func) {
    Block &body = func.getBody().front();
    // Regions: (stage, micro-batch) -> its forward ops, in order.
    using Key = std::pair<int64_t, int64_t>;
    std::map<Key, SmallVector<Operation *>> forward;
    std::map<Key, Operation *> firstBackward;
    int64_t lastMicroBatch = 0;
    for (Operation &op : body.without_terminator()) {
      Key key{stageOf(&op).value_or(0), microBatchOf(&op).value_or(0)};
      lastMicroBatch = std::max(lastMicroBatch, key.second);
      if (isForward(&op) && recomputable(&op))
        forward[key].push_back(&op);
      else if (hasPhase(&op, "backward") && !firstBackward.count(key))
        firstBackward[key] = &op;
    }
    OpBuilder b(func.getContext());
    for (auto &[key, ops] : forward) {
      if (exceptLast && key.second == lastMicroBatch)
        continue;
      auto it = firstBackward.find(key);
      if (it == firstBackward.end())
        continue;
      // The ops the backward of this region needs, and their ancestors
      // inside the region.
      llvm::SetVector<Operation *> needed;
      llvm::DenseSet<Operation *> inRegion(ops.begin(), ops.end());
      SmallVector<Operation *> work;
      for (Operation *op : ops)
        for (Operation *user : op->getUsers())
          if (hasPhase(user, "backward") && stageOf(user) == stageOf(op))
            work.push_back(op);
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!needed.insert(op))
          continue;
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp(); def && inRegion.count(def))
            work.push_back(def);
      }
      if (needed.empty())
        continue;
      // Clone in program order right before the region's first backward op.
      b.setInsertionPoint(it->second);
      IRMapping map;
      for (Operation *op : ops) {
        if (!needed.contains(op))
          continue;
        Operation *clone = b.clone(*op, map);
        clone->setAttr(kPhaseAttr, b.getStringAttr("backward"));
        clone->setAttr("weft.recompute", b.getUnitAttr());
      }
      // The region's backward ops read the clones.
      for (Operation *op : needed)
        for (Value result : op->getResults())
          result.replaceUsesWithIf(map.lookup(result), [&](OpOperand &use) {
            Operation *user = use.getOwner();
            return hasPhase(user, "backward") &&
                   !user->hasAttr("weft.recompute") &&
                   stageOf(user) == stageOf(op) &&
                   microBatchOf(user) == microBatchOf(op);
          });
    }
  }
};

} // namespace
