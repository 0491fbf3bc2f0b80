//===- MemoryPlan.cpp - static arena layout of one rank's buffers ---------===//

#include "weft/Analysis/MemoryPlan.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

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

/// Places storages greedily by size, best fit among live-overlapping ones.
void assignOffsets(std::vector<Storage> &storages) {
  std::vector<unsigned> order(storages.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by start step so the layout is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
    if (storages[a].bytes != storages[b].bytes)
      return storages[a].bytes > storages[b].bytes;
    return storages[a].start < storages[b].start;
  });
  std::vector<unsigned> placed;
  for (unsigned index : order) {
    Storage &s = storages[index];
    std::vector<const Storage *> overlapping;
    for (unsigned other : placed)
      if (liveTogether(s, storages[other]))
        overlapping.push_back(&storages[other]);
    std::sort(overlapping.begin(), overlapping.end(),
              [](const Storage *a, const Storage *b) {
                return a->offset < b->offset;
              });
    int64_t bestOffset = -1, bestGap = INT64_MAX, cursor = 0;
    for (const Storage *o : overlapping) {
      int64_t gap = o->offset - cursor;
      if (gap >= s.bytes && gap < bestGap) {
        bestGap = gap;
        bestOffset = cursor;
      }
      cursor = std::max(cursor, o->offset + o->bytes);
    }
    s.offset = bestOffset >= 0 ? bestOffset : cursor;
    placed.push_back(index);
  }
}
} // namespace

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

  assignOffsets(plan.storages);
  for (const Storage &s : plan.storages)
    plan.arenaBytes = std::max(plan.arenaBytes, s.offset + s.size);
  return plan;
}
