//===- RegatherSequenceParallel.cpp - weft-regather-sequence-parallel -----===//
//
// Under sequence parallelism the input of a column-parallel linear is the
// all-gather of a sequence shard, and the linear's weight gradient reads it
// in the backward. Keeping the gathered tensor would keep T times the shard
// per linear; Megatron keeps the shard and gathers it again in the backward
// (Korthikanti et al. 2022, Section 4.2.2, the paragraph after Equation 3).
// This pass clones each forward all-gather (and f's copy of it, and the
// reshapes a gemm reads it through) right before
// the first backward op of its stage and micro-batch that reads it, and lets
// the backward read the clone: the forward's gathered tensor dies at its
// linear.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_REGATHERSEQUENCEPARALLEL
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct RegatherSequenceParallelPass
    : weft::impl::RegatherSequenceParallelBase<RegatherSequenceParallelPass> {
  void runOnOperation() override {
    SmallVector<shard::AllGatherOp> gathers;
    getOperation().walk([&](shard::AllGatherOp gather) {
      if (isForward(gather))
        gathers.push_back(gather);
    });
    for (shard::AllGatherOp gather : gathers)
      regather(gather);
  }

  /// The backward ops of `op`'s stage and micro-batch that read `v` (not
  /// recomputed clones, which read their own values).
  static SmallVector<OpOperand *> backwardReads(Value v, Operation *op) {
    SmallVector<OpOperand *> reads;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isGradient(user) && stageOf(user) == stageOf(op) &&
          microBatchOf(user) == microBatchOf(op))
        reads.push_back(&use);
    }
    return reads;
  }

  void regather(shard::AllGatherOp gather) {
    // The gathered tensor and its forward views: f's copy, and the
    // reshapes that fold its leading dims into a gemm's rows
    // (weft-fold-weight-transpose), which the weight gradient reads. Each
    // view follows the value it reads, the order the clones need.
    SmallVector<Value> values{gather.getResult()};
    for (size_t i = 0; i < values.size(); ++i)
      for (Operation *user : values[i].getUsers())
        if (isa<CopyToTensorParallelOp, ReshapeOp>(user) && isForward(user))
          values.push_back(user->getResult(0));
    Operation *first = nullptr;
    for (Value v : values)
      for (OpOperand *use : backwardReads(v, gather))
        if (!first || use->getOwner()->isBeforeInBlock(first))
          first = use->getOwner();
    if (!first)
      return;
    OpBuilder b(first);
    IRMapping map;
    for (Value v : values) {
      Operation *clone = b.clone(*v.getDefiningOp(), map);
      setTaskKind(clone, TaskKind::Recompute);
    }
    for (Value v : values)
      for (OpOperand *use : backwardReads(v, gather))
        use->set(map.lookup(v));
  }
};

} // namespace
