//===- MemoryPlan.cpp - static arena layout of one rank's buffers ---------===//

#include "weft/Analysis/MemoryPlan.h"

#include "MemoryPlacement.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace weft;

namespace {
int64_t aligned(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

BufferKind argumentKind(func::FuncOp func, unsigned index) {
  if (func.getArgAttr(index, kParamAttr))
    return BufferKind::Param;
  if (func.getArgAttr(index, kStateAttr))
    return BufferKind::State;
  if (func.getArgAttr(index, kOptimizerStateAttr))
    return BufferKind::OptimizerState;
  return BufferKind::Input;
}

/// The storages placed so far, indexed so that finding those live together
/// with one is not quadratic (a step unrolled over 64 micro-batches has
/// ~10^5 storages, thousands of them constants live the whole step;
/// comparing each with every placed storage, then sorting those, was). A
/// storage whose lifetime spans few steps looks in the buckets of
/// kBucketSteps steps it touches, plus the whole-step storages kept in
/// offset order; a long-lived one, which overlaps most others, walks every
/// placed storage in offset order (a flat array: the walk is the cost).
/// Either way the result needs no sort of the long lists.
class PlacedByLifetime {
public:
  static constexpr int kBucketSteps = 64, kMaxBuckets = 32;
  static constexpr size_t kRecent = 1024;
  PlacedByLifetime(const std::vector<Storage> &storages, int steps)
      : storages(storages), lastStep(std::max(steps - 1, 0)),
        buckets(steps / kBucketSteps + 1), seen(storages.size(), 0) {}

  void insert(unsigned index) {
    const Storage &s = storages[index];
    Placed entry{s.offset, s.offset + s.bytes, s.start, s.end};
    recent.insert(std::upper_bound(recent.begin(), recent.end(), entry), entry);
    if (recent.size() > kRecent) {
      std::vector<Placed> all(byOffset.size() + recent.size());
      std::merge(byOffset.begin(), byOffset.end(), recent.begin(), recent.end(),
                 all.begin());
      byOffset = std::move(all);
      recent.clear();
    }
    if (s.start == 0 && s.end == lastStep) {
      std::pair<int64_t, int64_t> range{s.offset, s.offset + s.bytes};
      wholeStep.insert(
          std::upper_bound(wholeStep.begin(), wholeStep.end(), range), range);
    } else if (isLong(s)) {
      longLived.push_back(index);
    } else {
      for (int b = s.start / kBucketSteps; b <= s.end / kBucketSteps; ++b)
        buckets[b].push_back(index);
    }
  }

  /// The [offset, offset + bytes) ranges of the placed storages live
  /// together with `s`, in offset order (ranges at one offset in any
  /// order: the gap before them and the end after them are the same).
  void liveWith(const Storage &s,
                std::vector<std::pair<int64_t, int64_t>> &out) {
    out.clear();
    if (isLong(s)) {
      // Both lists in offset order, merged as they are walked.
      auto take = [&](const Placed &p) {
        if (p.start <= s.end && s.start <= p.end) // liveTogether, on a copy
          out.push_back({p.offset, p.endByte});
      };
      auto r = recent.begin();
      for (const Placed &p : byOffset) {
        for (; r != recent.end() && *r < p; ++r)
          take(*r);
        take(p);
      }
      for (; r != recent.end(); ++r)
        take(*r);
      return;
    }
    partial.clear();
    ++query;
    auto consider = [&](unsigned other) {
      const Storage &o = storages[other];
      if (seen[other] != query && liveTogether(s, o)) {
        seen[other] = query;
        partial.push_back({o.offset, o.offset + o.bytes});
      }
    };
    for (unsigned other : longLived)
      consider(other);
    for (int b = s.start / kBucketSteps; b <= s.end / kBucketSteps; ++b)
      for (unsigned other : buckets[b])
        consider(other);
    std::sort(partial.begin(), partial.end());
    out.resize(partial.size() + wholeStep.size());
    std::merge(partial.begin(), partial.end(), wholeStep.begin(),
               wholeStep.end(), out.begin());
  }

private:
  bool isLong(const Storage &s) const {
    return s.end / kBucketSteps - s.start / kBucketSteps >= kMaxBuckets;
  }

  const std::vector<Storage> &storages;
  int lastStep;
  /// A placed storage's bytes and lifetime, ordered by offset.
  struct Placed {
    int64_t offset, endByte;
    int start, end;
    bool operator<(const Placed &o) const { return offset < o.offset; }
  };
  /// Every placed storage: the older ones in one array, the last few
  /// (fewer than kRecent) in another, each in offset order; cheaper to walk
  /// than a tree and to insert into than one array.
  std::vector<Placed> byOffset, recent;
  std::vector<std::pair<int64_t, int64_t>> wholeStep, partial;
  std::vector<unsigned> longLived; ///< long, not the whole step
  std::vector<std::vector<unsigned>> buckets;
  std::vector<unsigned> seen; ///< the last query that took each storage
  unsigned query = 0;
};

} // namespace

int64_t weft::detail::placeGreedy(std::vector<Storage> &storages, int steps,
                                  size_t fixed) {
  std::vector<unsigned> order(storages.size() - fixed);
  std::iota(order.begin(), order.end(), fixed);
  // Largest first; ties by start step so the layout is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    if (storages[a].bytes != storages[b].bytes)
      return storages[a].bytes > storages[b].bytes;
    return storages[a].start < storages[b].start;
  });
  PlacedByLifetime placed(storages, steps);
  for (size_t index = 0; index < fixed; ++index)
    placed.insert(index);
  std::vector<std::pair<int64_t, int64_t>> overlapping;
  for (unsigned index : order) {
    Storage &s = storages[index];
    placed.liveWith(s, overlapping);
    int64_t bestOffset = -1, bestGap = INT64_MAX, cursor = 0;
    for (auto [begin, end] : overlapping) {
      int64_t gap = begin - cursor;
      if (gap >= s.bytes && gap < bestGap) {
        bestGap = gap;
        bestOffset = cursor;
      }
      cursor = std::max(cursor, end);
    }
    s.offset = bestOffset >= 0 ? bestOffset : cursor;
    placed.insert(index);
  }
  int64_t top = 0;
  for (const Storage &s : storages)
    top = std::max(top, s.offset + s.bytes);
  return top;
}

std::optional<int64_t> weft::activationElementBytes(llvm::StringRef dtype) {
  return llvm::StringSwitch<std::optional<int64_t>>(dtype)
      .Case("f32", 4)
      .Cases({"f16", "bf16"}, 2)
      .Default(std::nullopt);
}

MemoryPlan weft::planMemory(func::FuncOp func,
                            const MemoryPlanOptions &options) {
  MemoryPlan plan;
  Block &body = func.getBody().front();
  int steps = 0;
  for (Operation &op : body.without_terminator()) {
    (void)op;
    ++steps;
  }
  plan.numSteps = steps;
  int last = std::max(steps - 1, 0);

  auto newStorage = [&](Value v, BufferKind kind, int start, int end) {
    Storage s;
    s.size = byteSize(v.getType());
    if (options.activationElementBytes > 0 && kind == BufferKind::Activation &&
        isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType()))
      s.size = numElements(v.getType()) * options.activationElementBytes;
    s.bytes = aligned(s.size);
    s.kind = kind;
    s.value = v;
    s.start = start;
    s.end = end;
    plan.storageOf[v] = plan.storages.size();
    plan.storages.push_back(s);
  };

  for (BlockArgument arg : func.getArguments())
    newStorage(arg, argumentKind(func, arg.getArgNumber()), 0, last);
  int step = 0;
  for (Operation &op : body.without_terminator()) {
    for (Value result : op.getResults()) {
      if (!isa<RankedTensorType>(result.getType()))
        continue; // a transfer request: no bytes
      std::optional<unsigned> alias =
          aliasedOperand(&op, cast<OpResult>(result).getResultNumber());
      if (alias) {
        // A view or an in-place update: the same bytes as the operand.
        plan.storageOf[result] = plan.storageOf.lookup(op.getOperand(*alias));
        continue;
      }
      bool constant = isa<ConstantOp>(op);
      newStorage(result,
                 constant ? BufferKind::Constant : BufferKind::Activation,
                 constant ? 0 : step, constant ? last : step);
    }
    // Every operand's storage lives at least until this step.
    for (Value operand : op.getOperands()) {
      if (!isa<RankedTensorType>(operand.getType()))
        continue;
      Storage &s = plan.storages[plan.storageOf.lookup(operand)];
      s.end = std::max(s.end, step);
    }
    ++step;
  }
  for (Value result : body.getTerminator()->getOperands())
    plan.storages[plan.storageOf.lookup(result)].end = last;

  if (!weft::detail::placeBySlots(plan, func))
    weft::detail::placeGreedy(plan.storages, steps);
  for (const Storage &s : plan.storages)
    plan.arenaBytes = std::max(plan.arenaBytes, s.offset + s.size);
  return plan;
}

void MemoryPlans::planAll(ArrayRef<func::FuncOp> funcs) {
  SmallVector<func::FuncOp> unplanned;
  for (func::FuncOp func : funcs)
    if (!plans.count(func.getOperation()))
      unplanned.push_back(func);
  if (unplanned.empty())
    return;
  std::vector<std::unique_ptr<MemoryPlan>> planned(unplanned.size());
  mlir::parallelFor(
      unplanned.front().getContext(), 0, unplanned.size(), [&](size_t i) {
        planned[i] = std::make_unique<MemoryPlan>(planMemory(unplanned[i]));
      });
  for (auto [func, plan] : llvm::zip(unplanned, planned))
    plans[func.getOperation()] = std::move(plan);
}

const MemoryPlan &MemoryPlans::of(func::FuncOp func) {
  std::unique_ptr<MemoryPlan> &plan = plans[func.getOperation()];
  if (!plan)
    plan = std::make_unique<MemoryPlan>(planMemory(func));
  return *plan;
}
