//===- Schedule.cpp - weft-schedule: one function per stage ---------------===//
//
// Orders each stage's ops by the pipeline schedule and outlines them into a
// function per stage; see Passes.td.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/TaskOrder.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <map>

namespace weft {
#define GEN_PASS_DEF_SCHEDULE
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Where an op runs on its stage: task index, then a sub-position within the
/// task (-1: at its start, 0: program order, 1: at its end).
struct Slot {
  int64_t task = 0;
  int sub = 0;
  int64_t order = 0; ///< program order (a receive's tag), to break ties
  bool operator<(const Slot &o) const {
    return std::tie(task, sub, order) < std::tie(o.task, o.sub, o.order);
  }
};

/// Which pipeline rank runs each stage, as which of its model chunks.
struct Placement {
  std::vector<int64_t> rankOf, chunkOf;       ///< by stage
  std::vector<std::vector<int64_t>> stagesOf; ///< by rank, by chunk
  int64_t chunks() const { return stagesOf.front().size(); }
};

/// A rank's ops in the order it runs them, each with its slot.
using Order = SmallVector<std::pair<Slot, Operation *>>;
/// A task of the rank's order by (kind, chunk, micro-batch): its index.
using TaskIndex = std::map<std::tuple<TaskKind, int64_t, int64_t>, int64_t>;

struct SchedulePass : weft::impl::ScheduleBase<SchedulePass> {
  using ScheduleBase::ScheduleBase;

  /// Where a send is waited for. A send of F(i)'s activation completes by
  /// the end of B(i) on the same stage: B(i) needs the gradient of what was
  /// sent, so the receiver has run F(i) and posted its receive by then.
  /// Under GPipe and 1F1B (one chunk, no split backward) a send of B(i)'s
  /// gradient completes by the end of the stage's next B: the receiver
  /// posts its receive one task before its own B(i), a task that needs
  /// nothing the sender does after B(i) (under 1F1B it is the forward whose
  /// activation the sender's next forward reads, before its next B; in a
  /// cool-down or under GPipe, the B before, which needs gradients the
  /// sender has sent). Waited for at the end of the step instead, every
  /// micro-batch's sent gradient stayed live to the end: M of them (512
  /// on GPT-3 1T's last stage of 64, 60 GB). Any other send (a zero-bubble
  /// or interleaved schedule's gradients, the summed gradient of a tied
  /// parameter) is waited for at the end of the step, when every receive
  /// has been posted. Waiting earlier (say, one task later) can deadlock
  /// under rendezvous sends, e.g. a U-Net skip from stage 0 to stage 3
  /// whose receive stage 3 posts only after it has sent a gradient stage 0
  /// is not yet receiving; weft-simulate-pipeline would name such a
  /// deadlock.
  static int64_t sendCompletionTask(Operation *wait, ScheduleKind kind,
                                    ArrayRef<OrderedTask> tasks,
                                    const TaskIndex &taskIndex,
                                    int64_t lastTask) {
    std::optional<int64_t> mb = microBatchOf(wait);
    if (!mb)
      return lastTask;
    TaskFields task = TaskFields::of(wait);
    if (isForward(wait))
      return taskIndex.at({TaskKind::Backward, task.chunk, *mb});
    if (kind != ScheduleKind::GPipe && kind != ScheduleKind::OneFOneB)
      return lastTask;
    auto at = taskIndex.find({TaskKind::Backward, task.chunk, *mb});
    if (at == taskIndex.end())
      return lastTask;
    for (int64_t t = at->second + 1; t < int64_t(tasks.size()); ++t)
      if (tasks[t].kind == TaskKind::Backward)
        return t;
    return lastTask;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("main");
    if (!func || !func->hasAttr(kPipelineStagesAttr))
      return;
    std::optional<ScheduleKind> kind = scheduleNamed(schedule);
    if (!kind) {
      func.emitError("weft-schedule: unknown schedule '")
          << schedule << "' (expected gpipe, 1f1b, interleaved, zb-h1, "
          << "zb-h2 or zb-v)";
      return signalPassFailure();
    }
    FailureOr<Placement> placement = placementOf(func, *kind);
    if (failed(placement))
      return signalPassFailure();
    int64_t ranks = placement->stagesOf.size();
    if (placement->chunks() > 1)
      numberDropouts(func);
    int64_t microbatches = 1;
    func.walk([&](Operation *op) {
      if (std::optional<int64_t> mb = microBatchOf(op))
        microbatches = std::max(microbatches, *mb + 1);
    });
    // Each rank's ops in program order, from one walk: a walk per stage
    // made the pass quadratic in the stages (64 at GPT-3 1T's layout).
    std::vector<SmallVector<Operation *>> opsOf(ranks);
    for (Operation &op : func.getBody().front().without_terminator())
      if (std::optional<int64_t> s = stageOf(&op);
          s && *s >= 0 && *s < int64_t(placement->rankOf.size()) &&
          !isa<ConstantOp>(op))
        opsOf[placement->rankOf[*s]].push_back(&op);
    // Ordering reads and tags only the rank's own ops: the ranks in
    // parallel. Outlining moves ops out of @main's one block: in turn.
    std::string error;
    std::vector<std::vector<OrderedTask>> taskOrders =
        rankTaskOrders(*kind, ranks, microbatches, placement->chunks(), &error);
    if (taskOrders.empty()) {
      func.emitError("weft-schedule: ") << error;
      return signalPassFailure();
    }
    std::vector<Order> orders(ranks);
    mlir::parallelFor(&getContext(), 0, ranks, [&](size_t r) {
      orders[r] =
          orderStage(opsOf[r], *kind, taskOrders[r], *placement, microbatches);
    });
    postReceivesInSendOrder(orders);
    for (int64_t r = 0; r < ranks; ++r)
      if (failed(outlineStage(func, orders[r], *kind, r, *placement,
                              microbatches)))
        return signalPassFailure();
    func.erase();
  }

  /// Dropout masks are keyed by rng_id, which plan emission counts per
  /// micro-batch in forward order across the stage functions; a rank's
  /// function with several chunks is not one piece of that order, so the
  /// ids are given here, on @main, whose program order is it (what
  /// weft-checkpoint does when it recomputes).
  static void numberDropouts(func::FuncOp func) {
    std::map<int64_t, int64_t> next;
    Builder b(func.getContext());
    for (Operation &op : func.getBody().front())
      if (drawsDropoutMask(&op) && !op.hasAttr(kRngIdAttr))
        op.setAttr(kRngIdAttr,
                   b.getI64IntegerAttr(next[microBatchOf(&op).value_or(0)]++));
  }

  /// Which rank runs each stage (weft.stage_ranks, else one stage per
  /// rank), checked against the schedule's placement (TaskOrder.h's
  /// chunkStage).
  static FailureOr<Placement> placementOf(func::FuncOp func,
                                          ScheduleKind kind) {
    int64_t stages =
        func->getAttrOfType<IntegerAttr>(kPipelineStagesAttr).getInt();
    Placement placement;
    int64_t ranks = 0;
    for (int64_t s = 0; s < stages; ++s) {
      placement.rankOf.push_back(rankOfStage(func, s));
      if (placement.rankOf.back() < 0)
        return func.emitError("weft-schedule: stage ")
               << s << " is placed on rank " << placement.rankOf.back();
      ranks = std::max(ranks, placement.rankOf.back() + 1);
    }
    placement.stagesOf.resize(ranks);
    for (int64_t s = 0; s < stages; ++s) {
      std::vector<int64_t> &own = placement.stagesOf[placement.rankOf[s]];
      placement.chunkOf.push_back(own.size());
      own.push_back(s);
    }
    int64_t chunks = stages / ranks;
    bool even = llvm::all_of(placement.stagesOf, [&](const auto &own) {
      return int64_t(own.size()) == chunks;
    });
    if (!even || chunks * ranks != stages ||
        chunks != chunksPerRank(kind, chunks))
      return func.emitError("weft-schedule: ")
             << scheduleName(kind) << " runs "
             << chunksPerRank(kind, std::max<int64_t>(chunks, 2))
             << " model chunk(s) per rank; the partition placed " << stages
             << " stages on " << ranks << " ranks";
    // Each rank's stages in chunk order, as the schedule places them.
    for (int64_t r = 0; r < ranks; ++r) {
      std::vector<int64_t> &own = placement.stagesOf[r];
      for (int64_t c = 0; c < chunks; ++c)
        own[c] = chunkStage(kind, ranks, r, c);
      llvm::SmallVector<int64_t> sorted(own.begin(), own.end());
      llvm::sort(sorted);
      for (int64_t c = 0; c < chunks; ++c) {
        if (sorted[c] >= stages || placement.rankOf[sorted[c]] != r)
          return func.emitError("weft-schedule: ")
                 << scheduleName(kind) << " runs stage " << own[c]
                 << " on rank " << r << "; the partition placed it on rank "
                 << placement.rankOf[std::min(own[c], stages - 1)];
        placement.chunkOf[own[c]] = c;
      }
    }
    return placement;
  }

  /// Each op of a rank with its slot in the rank's task order `tasks`,
  /// sorted.
  SmallVector<std::pair<Slot, Operation *>>
  orderStage(ArrayRef<Operation *> ops, ScheduleKind kind,
             ArrayRef<OrderedTask> tasks, const Placement &placement,
             int64_t microbatches) {
    // Each op's chunk: which of the rank's stages it is on.
    if (placement.chunks() > 1)
      for (Operation *op : ops) {
        TaskFields task = TaskFields::of(op);
        task.chunk = placement.chunkOf[*task.stage];
        setTask(op, task);
      }
    // Without the split, a weight gradient runs in its backward's task.
    if (!splitsWeightGradient(kind))
      for (Operation *op : ops)
        if (taskKindOf(op) == TaskKind::Weight)
          setTaskKind(op, TaskKind::Backward);
    TaskIndex taskIndex;
    for (auto [i, t] : llvm::enumerate(tasks))
      taskIndex[{t.kind, t.chunk, t.microBatch}] = i;
    int64_t lastTask = tasks.size(); // optimizer updates

    llvm::DenseMap<Operation *, int64_t> taskOf;
    llvm::DenseSet<Operation *> moved; // to a later task than its tag's
    SmallVector<Operation *> unresolved;
    for (Operation *op : ops) {
      if (isUpdate(op)) {
        taskOf[op] = lastTask;
      } else if (std::optional<int64_t> mb =
                     microbatches == 1 ? 0 : microBatchOf(op)) {
        // With one micro-batch, accumulation left no tags: all is F0/B0.
        int64_t t = taskIndex.at(
            {scheduledTaskKind(op), TaskFields::of(op).chunk, *mb});
        // Never before an operand's task: a data-parallel bucket joins its
        // last gradient in program order, a B, where a split schedule may
        // run a member's W later.
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (auto it = taskOf.find(def);
                it != taskOf.end() && it->second > t)
              t = it->second, moved.insert(op);
        taskOf[op] = t;
      } else {
        // Gradient sums across micro-batches: after the latest operand.
        std::optional<int64_t> latest;
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (auto it = taskOf.find(def); it != taskOf.end())
              latest = std::max(latest.value_or(0), it->second);
        if (latest)
          taskOf[op] = *latest;
        else
          unresolved.push_back(op);
      }
    }
    // No scheduled operand (micro-batch-free ops on arguments only): run
    // them in the earliest task of a user.
    for (Operation *op : llvm::reverse(unresolved)) {
      int64_t earliest = lastTask;
      for (Operation *user : op->getUsers())
        if (auto it = taskOf.find(user); it != taskOf.end())
          earliest = std::min(earliest, it->second);
      taskOf[op] = earliest;
    }

    // Ops placed by their operands or users now carry their task's tags, so
    // the plan, traces and the simulator see which task runs them.
    for (Operation *op : ops) {
      int64_t t = taskOf[op];
      if (t == lastTask) {
        setTaskKind(op, TaskKind::Update);
        continue;
      }
      if (microBatchOf(op) && !moved.contains(op))
        continue;
      TaskFields task = TaskFields::of(op);
      task.microBatch = tasks[t].microBatch;
      if (tasks[t].kind != TaskKind::Forward &&
          scheduledKind(task.kind) != tasks[t].kind)
        task.kind = tasks[t].kind;
      setTask(op, task);
    }

    SmallVector<std::pair<Slot, Operation *>> order;
    for (auto [i, op] : llvm::enumerate(ops)) {
      Slot slot{taskOf[op], 0, static_cast<int64_t>(i)};
      // Post receives one task early: the transfer overlaps it. Those of a
      // task in tag order, which is mostly their senders' order (tags
      // number the transfers in producer order); postReceivesInSendOrder
      // makes it so where it is not.
      if (auto recv = dyn_cast<IRecvOp>(op))
        slot = {std::max<int64_t>(slot.task - 1, 0), -1,
                static_cast<int64_t>(recv.getTag())};
      else if (auto wait = dyn_cast<WaitSendOp>(op)) {
        int64_t t = sendCompletionTask(op, kind, tasks, taskIndex, lastTask);
        // Never before the send's own task (one moved past its tag's).
        if (Operation *send = wait.getRequest().getDefiningOp())
          if (auto it = taskOf.find(send); it != taskOf.end())
            t = std::max(t, it->second);
        slot = {t, 1, slot.order};
      }
      order.push_back({slot, op});
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    return order;
  }

  /// Posts each channel's receives in its sender's order. A pair of ranks
  /// must post its transfers in one order at both ends (NCCL matches them
  /// by order; the plan loader checks it), but a receive's slot comes from
  /// the receiver's task order: under a zero-bubble schedule the sender
  /// runs W(i)'s sends after B(i+r)'s while the receiver may need them in
  /// the opposite order. A receive whose successor on its channel is
  /// posted earlier moves up to it: posting early is always safe (it holds
  /// its buffer longer), posting out of order is not.
  static void postReceivesInSendOrder(std::vector<Order> &orders) {
    llvm::DenseMap<int64_t, int64_t> sendPosition; // by tag
    for (const Order &order : orders)
      for (auto [i, slotted] : llvm::enumerate(order))
        if (auto send = dyn_cast<ISendOp>(slotted.second))
          sendPosition[send.getTag()] = i;
    for (Order &order : orders) {
      // Per peer: its receives' indices in `order`, in the peer's order.
      std::map<int64_t, SmallVector<size_t>> channels;
      for (auto [i, slotted] : llvm::enumerate(order))
        if (auto recv = dyn_cast<IRecvOp>(slotted.second))
          channels[recv.getPeer()].push_back(i);
      bool moved = false;
      for (auto &[peer, recvs] : channels) {
        auto sent = [&](size_t i) {
          return sendPosition.lookup(cast<IRecvOp>(order[i].second).getTag());
        };
        llvm::sort(recvs,
                   [&](size_t a, size_t b) { return sent(a) < sent(b); });
        for (size_t k = recvs.size(); k-- > 1;) {
          Slot &earlier = order[recvs[k - 1]].first;
          if (order[recvs[k]].first.task < earlier.task) {
            earlier.task = order[recvs[k]].first.task;
            moved = true;
          }
        }
        // Within a task, receives go in tag order across channels; a
        // channel's own take its tags in its send order.
        for (size_t k = 0; k < recvs.size();) {
          size_t end = k;
          SmallVector<int64_t> keys;
          while (end < recvs.size() &&
                 order[recvs[end]].first.task == order[recvs[k]].first.task)
            keys.push_back(order[recvs[end++]].first.order);
          llvm::sort(keys);
          for (size_t j = k; j < end; ++j) {
            moved |= order[recvs[j]].first.order != keys[j - k];
            order[recvs[j]].first.order = keys[j - k];
          }
          k = end;
        }
      }
      if (moved)
        std::stable_sort(
            order.begin(), order.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
    }
  }

  /// Moves rank `stage`'s ops, in `order`, into its function (named for
  /// the stage it runs, or the rank with model chunks).
  LogicalResult outlineStage(func::FuncOp func,
                             ArrayRef<std::pair<Slot, Operation *>> order,
                             ScheduleKind kind, int64_t stage,
                             const Placement &placement, int64_t microbatches) {
    int64_t stages = placement.rankOf.size();
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    MLIRContext *ctx = func.getContext();

    // Arguments the stage uses, in the original order.
    llvm::SmallSetVector<unsigned, 16> argsUsed;
    for (auto &[slot, op] : order)
      for (Value v : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(v))
          argsUsed.insert(arg.getArgNumber());
    // Results the rank produces; results no stage computes (constants,
    // arguments) go to rank 0.
    SmallVector<unsigned> resultsOwned;
    for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
      Operation *def = v.getDefiningOp();
      std::optional<int64_t> owner = def && !isa<ConstantOp>(def)
                                         ? stageOf(def)
                                         : std::optional<int64_t>(0);
      if (owner && placement.rankOf[*owner] == stage) {
        resultsOwned.push_back(i);
        if (auto arg = dyn_cast<BlockArgument>(v))
          argsUsed.insert(arg.getArgNumber());
      }
    }
    SmallVector<unsigned> args(argsUsed.begin(), argsUsed.end());
    llvm::sort(args);

    OpBuilder b(ctx);
    b.setInsertionPoint(func);
    SmallVector<Type> argTypes, resultTypes;
    for (unsigned i : args)
      argTypes.push_back(func.getArgument(i).getType());
    for (unsigned i : resultsOwned)
      resultTypes.push_back(ret.getOperand(i).getType());
    auto stageFunc = func::FuncOp::create(
        b, func.getLoc(), ("stage" + std::to_string(stage)),
        FunctionType::get(ctx, argTypes, resultTypes));
    for (auto [k, i] : llvm::enumerate(args))
      stageFunc.setArgAttrs(k, func.getArgAttrDict(i));
    for (auto [k, i] : llvm::enumerate(resultsOwned))
      stageFunc.setResultAttrs(k, func.getResultAttrDict(i));
    stageFunc->setAttr(kStageAttr, b.getI64IntegerAttr(stage));
    stageFunc->setAttr(kPipelineStagesAttr, b.getI64IntegerAttr(stages));
    stageFunc->setAttr(kMicroBatchesAttr, b.getI64IntegerAttr(microbatches));
    stageFunc->setAttr("weft.schedule", b.getStringAttr(scheduleName(kind)));
    if (placement.chunks() > 1)
      stageFunc->setAttr(kChunkStagesAttr,
                         b.getDenseI64ArrayAttr(placement.stagesOf[stage]));

    Block *entry = stageFunc.addEntryBlock();
    IRMapping map;
    for (auto [k, i] : llvm::enumerate(args))
      map.map(func.getArgument(i), entry->getArgument(k));
    b.setInsertionPointToEnd(entry);
    // Constants first: every stage has its own copy of those it uses.
    auto cloneConstants = [&](Operation *op) {
      for (Value v : op->getOperands())
        if (auto constant = v.getDefiningOp<ConstantOp>();
            constant && !map.contains(v))
          b.clone(*constant, map);
    };
    for (auto &[slot, op] : order)
      cloneConstants(op);
    cloneConstants(ret);
    // Every operand is an argument, a constant or the result of an op
    // placed before it on the stage; checked before anything moves.
    llvm::DenseSet<Operation *> placed;
    for (auto &[slot, op] : order) {
      for (Value v : op->getOperands())
        if (!map.contains(v) && !placed.contains(v.getDefiningOp()))
          return op->emitError("weft-schedule: an operand of ")
                 << op->getName() << " (" << taskOf(op) << ") on rank " << stage
                 << " is not available there: its producer "
                 << (v.getDefiningOp()
                         ? v.getDefiningOp()->getName().getStringRef()
                         : StringRef("(argument)"))
                 << " is on another rank without a transfer, or runs after "
                 << "this use";
      placed.insert(op);
    }
    // The ops moved, not cloned (a clone per op of the unrolled step was
    // most of this pass's time at GPT-3 scale), their arguments and
    // constants remapped to the stage function's.
    for (auto &[slot, op] : order) {
      for (OpOperand &operand : op->getOpOperands())
        if (Value mapped = map.lookupOrNull(operand.get()))
          operand.set(mapped);
      op->moveBefore(entry, entry->end());
    }
    SmallVector<Value> results;
    for (unsigned i : resultsOwned)
      results.push_back(map.lookupOrDefault(ret.getOperand(i)));
    func::ReturnOp::create(b, ret.getLoc(), results);
    return success();
  }
};

} // namespace
