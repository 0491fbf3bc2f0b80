//===- OverlapCollectives.cpp - weft-overlap-collectives ------------------===//
//
// Splits each tensor- and sequence-parallel collective into a post and a
// `weft.wait_collective`, so that the compute between them runs while the
// collective is in flight. The overlap Megatron-LM builds by hand in its
// linear layers' backward (Korthikanti et al. 2022, Section 4.2.2: the
// all-gather of a linear's input and the reduce-scatter of its input
// gradient overlap the gradient GEMMs; Megatron's
// `LinearWithGradAccumulationAndAsyncCommunication`) falls out of two local
// moves on the scheduled order:
//
//   post early: the op producing a collective's operand (the input-gradient
//     GEMM) moves up past the ops of its task it does not depend on (the
//     weight-gradient GEMM), and the collective up to it, past other posts
//     and at most one op it does not depend on (under sequence parallelism
//     the regathered input's all-gather then overlaps the input-gradient
//     GEMM);
//   wait late: the wait sinks to the first op that reads the result;
//   then at most two data-parallel gradient buckets' reduce-scatters stay
//     in flight (boundBucketsInFlight).
//
// Moves never cross a task's boundary (its kind and micro-batch) or an op
// that updates a buffer in place (which might be the collective's; a
// micro-batch sum's add writes only its running sum, and stops only moves
// of ops that touch it), and
// posts never cross a transfer. Posts may trade places with each other:
// the members of a group run one function, so they all post in the new
// order. A wait may pass other posts and waits: completing later never
// blocks a peer. The memory plan sees the collective's operand live until
// the wait.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <deque>

namespace weft {
#define GEN_PASS_DEF_OVERLAPCOLLECTIVES
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

bool isCollective(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp>(
      op);
}

/// What the moves ask of an op, looked up once per op: the walks pass each
/// op of a task once per collective of the task, and an attribute lookup by
/// name or an op record per visit made this pass a tenth of a GPT-3
/// compile. None of it changes when an op moves.
class TaskFacts {
public:
  /// Whether `op` belongs to the task (kind, micro-batch) of `anchor`.
  bool sameTask(Operation *op, Operation *anchor) {
    const Facts &a = of(op), &b = of(anchor);
    return a.microBatch == b.microBatch && a.kind == b.kind;
  }

  /// An op no post moves across: one with effects beyond its results (a
  /// transfer, an in-place update, another collective or its wait).
  bool isBarrier(Operation *op) { return of(op).barrier; }

  /// Whether `op` writes an operand's buffer (an optimizer update, batch
  /// norm's running statistics, a receive's wait).
  bool updatesInPlace(Operation *op) { return of(op).inPlace; }

  /// Whether `op` only adds into micro-batch sums in place: a sum's add
  /// (weft.accumulate, operand 0), or a weight-gradient GEMM accumulating
  /// into the running weight and bias gradients
  /// (weft-fold-grad-accumulation).
  bool accumulates(Operation *op) { return of(op).accumulates; }

  /// Whether `op` stops a move of ops that read or write `touched`: a
  /// barrier does, except an op that only accumulates (above), which
  /// writes only its running sums: it stops only a move of an op touching
  /// a sum's bytes. (weft-hoist-accumulation puts each sum's add right
  /// after its micro-batch's weight-gradient GEMM, and an accumulating GEMM
  /// is that GEMM, between a tensor-parallel collective's post and the
  /// GEMM it overlaps.)
  bool blocks(Operation *op, ArrayRef<Value> touched) {
    if (!isBarrier(op))
      return false;
    if (!of(op).accumulates)
      return true;
    for (unsigned r = 0; r < op->getNumResults(); ++r) {
      std::optional<unsigned> written = inPlaceOperand(op, r);
      if (!written)
        continue;
      Value sum = viewedValue(op->getOperand(*written));
      if (llvm::any_of(touched, [&](Value v) { return viewedValue(v) == sum; }))
        return true;
    }
    return false;
  }

private:
  struct Facts {
    TaskKind kind;
    std::optional<int64_t> microBatch;
    bool inPlace, barrier, accumulates;
  };
  const Facts &of(Operation *op) {
    auto [it, added] = facts.try_emplace(op);
    if (added) {
      Facts &f = it->second;
      f.kind = scheduledTaskKind(op);
      f.microBatch = microBatchOf(op);
      f.inPlace = false;
      for (unsigned r = 0; r < op->getNumResults(); ++r)
        f.inPlace |= inPlaceOperand(op, r).has_value();
      f.barrier =
          isCollective(op) || op->hasTrait<OpTrait::IsTerminator>() ||
          isa<ISendOp, IRecvOp, WaitSendOp, WaitRecvOp, WaitCollectiveOp>(op) ||
          f.inPlace;
      if (auto wgrad = dyn_cast<WgradBiasOp>(op))
        f.accumulates = !wgrad.getAccumulate().empty();
      else
        f.accumulates = isa<AddOp>(op) && op->hasAttr(kAccumulateAttr) &&
                        inPlaceOperand(op, 0) == 0u;
    }
    return it->second;
  }
  llvm::DenseMap<Operation *, Facts> facts;
};

/// Whether `op` reads a result of `producer`.
bool reads(Operation *op, Operation *producer) {
  for (Value operand : op->getOperands())
    if (operand.getDefiningOp() == producer)
      return true;
  return false;
}

/// Moves the producer `op` up past the ops of its task it does not read
/// from (none of which is a barrier).
void hoistProducer(Operation *op, TaskFacts &task) {
  Operation *target = op;
  SmallVector<Value> touched(op->getOperands());
  llvm::append_range(touched, op->getResults());
  for (Operation *prev = op->getPrevNode();
       prev && task.sameTask(prev, op) && !task.blocks(prev, touched) &&
       !reads(op, prev);
       prev = prev->getPrevNode())
    target = prev;
  if (target != op)
    op->moveBefore(target);
}

/// Moves the collective `op` up past the posts of other collectives and at
/// most one other op of its task it does not read from (micro-batch sums'
/// adds aside, which follow their GEMMs). Posts may trade
/// places: every member of a group runs this function, so all post in the
/// new order. One op at most: a collective whose operand was computed long
/// before (sequence parallelism's regathered linear input, a forward
/// value) would otherwise be posted at the start of the task, holding its
/// whole result from there (Megatron posts that all-gather just before the
/// input-gradient GEMM it overlaps).
void hoistCollective(Operation *op, TaskFacts &task) {
  Operation *target = op;
  int passed = 0;
  for (Operation *prev = op->getPrevNode();
       prev && task.sameTask(prev, op) && !reads(op, prev);
       prev = prev->getPrevNode()) {
    // A micro-batch sum's add is not counted: it follows its weight
    // gradient's GEMM (weft-hoist-accumulation), which is the op to pass.
    // An accumulating GEMM is that GEMM, and counts.
    bool sumsAdd = isa<AddOp>(prev) && task.accumulates(prev);
    if (!isCollective(prev) &&
        (task.blocks(prev, SmallVector<Value>(op->getOperands())) ||
         (!sumsAdd && ++passed > 1)))
      break;
    target = prev;
  }
  if (target != op)
    op->moveBefore(target);
}

struct OverlapCollectivesPass
    : weft::impl::OverlapCollectivesBase<OverlapCollectivesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> collectives;
    getOperation().walk([&](Operation *op) {
      if (isCollective(op))
        collectives.push_back(op);
    });
    TaskFacts task;
    for (Operation *collective : collectives)
      postEarly(collective, task);
    for (Operation *collective : collectives)
      waitLate(collective, task);
    boundBucketsInFlight(getOperation(), task);
  }

  /// A data-parallel bucket's reduce-scatter (ZeRO 1 to 3) holds the whole
  /// bucket until its wait, and each would wait at the end of its
  /// micro-batch's backward, where its shard is added to the sums: every
  /// bucket of the micro-batch in flight at once, all of the rank's
  /// unsharded gradients live, which ZeRO-2 and 3 exist not to hold. So at
  /// most two are in flight, as double buffering: the oldest's wait moves
  /// up before the third's bucket is packed, and one bucket reduces while
  /// the next one's gradients are computed. Only within a task.
  static constexpr size_t kReduceScattersInFlight = 2;
  static void boundBucketsInFlight(func::FuncOp func, TaskFacts &task) {
    for (Block &block : func.getBody()) {
      // The waits and bucket reduce-scatters in the block's order before
      // any moves: a wait moved up from right after the scatter being
      // visited would otherwise bring a walk of the live block back to
      // that scatter, which would then move a second wait, and at last its
      // own, above its bucket.
      SmallVector<Operation *> walk;
      for (Operation &op : block)
        if (isa<WaitCollectiveOp>(op) ||
            (isa<shard::ReduceScatterOp>(op) && op.hasAttr(kBucketAttr)))
          walk.push_back(&op);
      // The waits of the bucket reduce-scatters in flight, oldest first (a
      // wait is in its collective's task).
      std::deque<WaitCollectiveOp> inFlight;
      for (Operation *op : walk) {
        if (auto wait = dyn_cast<WaitCollectiveOp>(op)) {
          llvm::erase(inFlight, wait);
          continue;
        }
        auto scatter = cast<shard::ReduceScatterOp>(op);
        if (inFlight.size() >= kReduceScattersInFlight) {
          WaitCollectiveOp wait = inFlight.front();
          inFlight.pop_front();
          if (task.sameTask(wait, scatter)) {
            // Before the bucket's packing, when it was posted right after.
            Operation *target = scatter;
            Operation *pack = scatter->getOperand(0).getDefiningOp();
            if (pack && pack == scatter->getPrevNode() &&
                task.sameTask(pack, scatter))
              target = pack;
            wait->moveBefore(target);
          }
        }
        for (Operation *user : scatter->getResult(0).getUsers())
          if (auto wait = dyn_cast<WaitCollectiveOp>(user))
            inFlight.push_back(wait);
      }
    }
  }

  /// The producer of the collective's operand first (when only the
  /// collective reads it, and it is a plain compute op of the same task),
  /// then the collective right after whatever it still follows. A gemm's
  /// result reaches its collective through a reshape (its rows unfolded,
  /// weft-fold-weight-transpose): the gemm moves, its views follow it.
  static void postEarly(Operation *collective, TaskFacts &task) {
    auto movable = [&](Operation *op) {
      return op && op->getBlock() == collective->getBlock() &&
             op->hasOneUse() && task.sameTask(op, collective) &&
             !task.isBarrier(op) && !isa<ConstantOp>(op);
    };
    Operation *producer = collective->getOperand(0).getDefiningOp();
    SmallVector<Operation *> views;
    while (movable(producer) && isView(producer)) {
      views.push_back(producer);
      producer = producer->getOperand(0).getDefiningOp();
    }
    if (movable(producer)) {
      hoistProducer(producer, task);
      Operation *last = producer;
      for (Operation *view : llvm::reverse(views)) {
        view->moveAfter(last);
        last = view;
      }
    } else {
      for (Operation *view : llvm::reverse(views))
        hoistProducer(view, task);
    }
    hoistCollective(collective, task);
  }

  static void waitLate(Operation *collective, TaskFacts &task) {
    if (isWaitedFor(collective))
      return; // already split
    Value posted = collective->getResult(0);
    OpBuilder b(collective->getContext());
    b.setInsertionPointAfter(collective);
    auto wait = WaitCollectiveOp::create(b, collective->getLoc(), posted,
                                         collective->getOperand(0));
    // The wait belongs to the collective's task.
    joinTask(wait, collective);
    posted.replaceAllUsesExcept(wait.getValue(), wait);
    // Views of the result (a reshape before the GEMM that reads it) cost
    // nothing: they move down with the wait, and their readers count as
    // the result's.
    llvm::SmallPtrSet<Operation *, 4> result{wait};
    SmallVector<Operation *> views;
    auto readsResult = [&](Operation *op) {
      return llvm::any_of(op->getOperands(), [&](Value v) {
        return result.contains(v.getDefiningOp());
      });
    };
    Operation *last = wait;
    for (Operation *next = wait->getNextNode(); next;
         next = next->getNextNode()) {
      // Another wait only completes its own transfer's or collective's
      // bytes; a true in-place update might write this one's.
      bool writesInPlace =
          task.updatesInPlace(next) &&
          !isa<WaitCollectiveOp, WaitRecvOp>(next) &&
          task.blocks(next, {collective->getOperand(0), posted});
      // Constants belong to no task (each stage holds its own copies).
      if (isa<ConstantOp>(next)) {
        last = next;
        continue;
      }
      if (!task.sameTask(next, collective) ||
          next->hasTrait<OpTrait::IsTerminator>() || writesInPlace)
        break;
      if (readsResult(next)) {
        if (!isView(next))
          break;
        result.insert(next);
        views.push_back(next);
        continue;
      }
      last = next;
    }
    if (last == wait)
      return;
    wait->moveAfter(last);
    for (Operation *view : llvm::reverse(views))
      view->moveAfter(wait);
  }
};

} // namespace
