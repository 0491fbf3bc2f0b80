//===- Checkpoint.cpp - weft-checkpoint: recompute in the backward --------===//
//
// Activation recompute: full (per stage or per layer) and Megatron's
// selective recompute of core attention; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "AttributeSets.h"

#include "weft/Analysis/RepeatedLayers.h"
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

/// Ops whose recomputation would be wrong or pointless.
bool recomputable(Operation *op) {
  if (isa<ConstantOp, IRecvOp, WaitRecvOp, ISendOp, WaitSendOp>(op))
    return false;
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    if (inPlaceOperand(op, r))
      return false; // training batch norm: running statistics in place
  return isPure(op) || isa<DropoutOp, AttentionOp>(op);
}

/// Megatron's core attention (Korthikanti et al. 2022, section 5): the
/// large, cheap activations between QK^T and attention x V. Matched from
/// each softmax: backwards through single-use elementwise scale and mask
/// ops (mul, div, add, sub, where) and casts whose result has the softmax's
/// shape, to the matmul QK^T; forwards through an optional dropout and
/// casts to the matmul that multiplies the probabilities (its lhs) with V.
/// Both matmuls must exist. The casts are --precision's: a bf16 or f16
/// step computes the scores in 16 bits and the softmax in f32.
/// This covers the gpt example (QK^T, / sqrt(d), where(mask), softmax,
/// dropout, x V) and torch.nn.MultiheadAttention's export (scaled q, QK^T,
/// + mask, softmax, dropout, x V, the scaling staying outside). Returns
/// each attention's ops in program order.
std::vector<SmallVector<Operation *>> matchCoreAttention(func::FuncOp func) {
  // Uses by forward ops only: after weft-autodiff, backward ops read these
  // values too.
  auto forwardUsers = [](Value v) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : v.getUses())
      if (isForward(use.getOwner()))
        uses.push_back(&use);
    return uses;
  };
  std::vector<SmallVector<Operation *>> attentions;
  func.walk([&](SoftmaxOp softmax) {
    SmallVector<Operation *> ops{softmax};
    ArrayRef<int64_t> scores = softmax.getType().getShape();
    auto isScores = [&](Value value) {
      auto shaped = dyn_cast<ShapedType>(value.getType());
      return shaped && shaped.getShape() == scores;
    };
    // Backwards to QK^T.
    Value v = softmax->getOperand(0);
    Operation *qk = nullptr;
    while (Operation *def = v.getDefiningOp()) {
      if (isa<MatMulOp>(def)) {
        qk = def;
        break;
      }
      if (!isa<MulOp, DivOp, AddOp, SubOp, WhereOp, CastOp>(def) ||
          forwardUsers(v).size() != 1)
        return;
      ops.push_back(def);
      // Continue along the operand that carries the scores.
      Value next;
      for (Value operand : def->getOperands())
        if (isScores(operand) && operand.getDefiningOp())
          next = operand;
      if (!next)
        return;
      v = next;
    }
    if (!qk)
      return;
    ops.push_back(qk);
    // Forwards to attention x V.
    Value probs = softmax.getResult();
    for (bool dropped = false;;) {
      auto users = forwardUsers(probs);
      Operation *next = users.size() == 1 ? users[0]->getOwner() : nullptr;
      if (isa_and_nonnull<CastOp>(next) ||
          (isa_and_nonnull<DropoutOp>(next) && !dropped)) {
        dropped |= isa<DropoutOp>(next);
        ops.push_back(next);
        probs = next->getResult(0);
        continue;
      }
      break;
    }
    for (OpOperand *use : forwardUsers(probs))
      if (isa<MatMulOp>(use->getOwner()) && use->getOperandNumber() == 0) {
        ops.push_back(use->getOwner());
        llvm::sort(ops, [](Operation *a, Operation *b) {
          return a->isBeforeInBlock(b);
        });
        attentions.push_back(std::move(ops));
        return;
      }
  });
  return attentions;
}

struct CheckpointPass : weft::impl::CheckpointBase<CheckpointPass> {
  using CheckpointBase::CheckpointBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (policy == "none")
      return;
    if (policy != "full" && policy != "selective") {
      func.emitError("weft-checkpoint: unknown policy '")
          << policy << "' (expected none, full or selective)";
      return signalPassFailure();
    }
    if (granularity != "stage" && granularity != "layer") {
      func.emitError("weft-checkpoint: unknown granularity '")
          << granularity << "' (expected stage or layer)";
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
    func.walk([&](Operation *op) {
      if (!drawsDropoutMask(op))
        return;
      int64_t mb = microBatchOf(op).value_or(0);
      op->setAttr(kRngIdAttr, b.getI64IntegerAttr(next[mb]++));
    });
  }

  /// Recomputes, per (stage, micro-batch), the forward ops the backward
  /// reads: the whole region (full, stage granularity), each layer (full,
  /// layer granularity) or each core attention (selective).
  void recompute(func::FuncOp func) {
    Block &body = func.getBody().front();
    // Regions: (stage, micro-batch) -> its forward ops, in order.
    using Key = std::pair<int64_t, int64_t>;
    auto keyOf = [](Operation *op) {
      return Key{stageOf(op).value_or(0), microBatchOf(op).value_or(0)};
    };
    std::map<Key, SmallVector<Operation *>> forward;
    std::map<Key, Operation *> firstBackward;
    int64_t lastMicroBatch = 0;
    for (Operation &op : body.without_terminator()) {
      Key key = keyOf(&op);
      lastMicroBatch = std::max(lastMicroBatch, key.second);
      if (isForward(&op) && recomputable(&op))
        forward[key].push_back(&op);
      else if (runsInBackward(&op) && !firstBackward.count(key))
        firstBackward[key] = &op;
    }
    // A region with no backward has nothing to recompute for; under GPipe
    // the last micro-batch's backward follows its forward at once.
    auto skipped = [&](const Key &key) {
      return (exceptLast && key.second == lastMicroBatch) ||
             !firstBackward.count(key);
    };
    if (policy == "selective") {
      // Each core attention right before its own backward, so one layer's
      // attention scores are live again at a time.
      for (const SmallVector<Operation *> &attention : matchCoreAttention(func))
        if (!skipped(keyOf(attention.front())))
          recomputeRegion(attention, /*insertBefore=*/nullptr);
      return;
    }
    for (auto &[key, ops] : forward) {
      if (skipped(key))
        continue;
      if (granularity == "layer") {
        for (ArrayRef<Operation *> segment :
             repeatedLayers(residualSegments(ops)))
          recomputeRegion(segment, /*insertBefore=*/nullptr);
      } else {
        recomputeRegion(ops, firstBackward.at(key));
      }
    }
  }

  /// Clones the ops of `region` that its backward reads (with their
  /// ancestors in the region) before `insertBefore`, or, when null, before
  /// the first backward op that reads one of them; the backward then reads
  /// the clones.
  void recomputeRegion(ArrayRef<Operation *> region, Operation *insertBefore) {
    llvm::SetVector<Operation *> needed;
    llvm::DenseSet<Operation *> inRegion(region.begin(), region.end());
    SmallVector<Operation *> work;
    auto readsInBackward = [](Operation *user, Operation *op) {
      return isGradient(user) && stageOf(user) == stageOf(op) &&
             microBatchOf(user) == microBatchOf(op);
    };
    // A result a forward op outside the region reads (the next layer's input,
    // an activation sent to the next stage, a loss summed over micro-batches)
    // stays alive anyway: the backward reads the original, and clones start
    // from it.
    auto keptAnyway = [&](Value v) {
      for (Operation *user : v.getUsers())
        if (isForward(user) && !inRegion.contains(user))
          return true;
      return false;
    };
    bool findPoint = !insertBefore;
    for (Operation *op : region)
      for (Value result : op->getResults()) {
        if (keptAnyway(result))
          continue;
        for (Operation *user : result.getUsers())
          if (readsInBackward(user, op)) {
            work.push_back(op);
            if (findPoint &&
                (!insertBefore || user->isBeforeInBlock(insertBefore)))
              insertBefore = user;
          }
      }
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!needed.insert(op))
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && inRegion.count(def) && !keptAnyway(v))
          work.push_back(def);
    }
    if (needed.empty() || !insertBefore)
      return;
    // Clone in program order; the backward reads the clones.
    OpBuilder b(insertBefore);
    IRMapping map;
    AttributeSets tags(b.getContext());
    for (Operation *op : region) {
      if (!needed.contains(op))
        continue;
      Operation *clone = b.clone(*op, map);
      tags.setTaskField(clone, AttributeSets::TaskField::Kind,
                        static_cast<int64_t>(TaskKind::Recompute));
    }
    for (Operation *op : needed)
      for (Value result : op->getResults())
        if (!keptAnyway(result))
          result.replaceUsesWithIf(map.lookup(result), [&](OpOperand &use) {
            return readsInBackward(use.getOwner(), op);
          });
  }
};

} // namespace
