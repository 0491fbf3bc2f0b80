//===- MemoryBreakdown.cpp - what a rank's memory holds at its peak -------===//

#include "weft/Analysis/MemoryBreakdown.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace weft;

llvm::StringRef weft::categoryName(MemoryCategory category) {
  switch (category) {
  case MemoryCategory::Parameters:
    return "parameters";
  case MemoryCategory::OptimizerState:
    return "optimizer_state";
  case MemoryCategory::ModelState:
    return "model_state";
  case MemoryCategory::Inputs:
    return "inputs";
  case MemoryCategory::Constants:
    return "constants";
  case MemoryCategory::KeptActivations:
    return "kept_activations";
  case MemoryCategory::Gradients:
    return "gradients";
  case MemoryCategory::Temporaries:
    return "temporaries";
  case MemoryCategory::Communication:
    return "communication";
  }
  llvm_unreachable("unknown memory category");
}

namespace {

/// Whether a backward op reads `v`, directly or through views.
bool readByBackward(Value v) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (runsInBackward(user))
      return true;
    // Ops whose result is `v`'s bytes: views and the waits of transfers
    // and collectives (not a wait_collective's operand kept live, 1).
    bool aliases = isView(user) || isa<WaitRecvOp>(user) ||
                   (isa<WaitCollectiveOp>(user) && use.getOperandNumber() == 0);
    if (aliases && readByBackward(user->getResult(0)))
      return true;
  }
  return false;
}

} // namespace

MemoryCategory weft::categoryOf(const Storage &s) {
  switch (s.kind) {
  case BufferKind::Param:
    return MemoryCategory::Parameters;
  case BufferKind::OptimizerState:
    return MemoryCategory::OptimizerState;
  case BufferKind::State:
    return MemoryCategory::ModelState;
  case BufferKind::Input:
    return MemoryCategory::Inputs;
  case BufferKind::Constant:
    return MemoryCategory::Constants;
  case BufferKind::Activation:
    break;
  }
  Operation *def = s.value.getDefiningOp();
  if (isa_and_nonnull<IRecvOp>(def)) {
    // A received forward activation that the backward reads is kept like
    // any other; received gradients and activations only passed on are
    // communication buffers.
    return !runsInBackward(def) && readByBackward(s.value)
               ? MemoryCategory::KeptActivations
               : MemoryCategory::Communication;
  }
  if (def && runsInBackward(def))
    return MemoryCategory::Gradients;
  return readByBackward(s.value) ? MemoryCategory::KeptActivations
                                 : MemoryCategory::Temporaries;
}

weft::LiveBytes weft::liveBytesByStep(const MemoryPlan &plan,
                                      ArrayRef<MemoryCategory> categories) {
  // From +size at a storage's first step and -size after its last: one
  // pass over storages, one over steps.
  size_t steps = std::max(plan.numSteps, 1);
  LiveBytes live{std::vector<int64_t>(steps + 1, 0),
                 std::vector<int64_t>(steps + 1, 0)};
  for (auto [s, category] : llvm::zip_equal(plan.storages, categories)) {
    size_t first = std::min<size_t>(s.start, steps);
    size_t last = std::min<size_t>(s.end + 1, steps);
    if (first >= last)
      continue;
    auto add = [&](std::vector<int64_t> &bytes) {
      bytes[first] += s.size;
      bytes[last] -= s.size;
    };
    add(live.all);
    if (category == MemoryCategory::KeptActivations)
      add(live.kept);
  }
  for (std::vector<int64_t> *bytes : {&live.all, &live.kept}) {
    bytes->pop_back();
    for (size_t step = 1; step < steps; ++step)
      (*bytes)[step] += (*bytes)[step - 1];
  }
  return live;
}

MemoryBreakdown weft::breakDownMemory(func::FuncOp func,
                                      const MemoryPlan &plan) {
  MemoryBreakdown result;
  result.arenaBytes = plan.arenaBytes;
  std::vector<MemoryCategory> categories;
  for (const Storage &s : plan.storages)
    categories.push_back(categoryOf(s));
  LiveBytes live = liveBytesByStep(plan, categories);
  result.peakStep = std::max_element(live.all.begin(), live.all.end()) -
                    live.all.begin();
  result.maxKeptActivations =
      *std::max_element(live.kept.begin(), live.kept.end());
  for (auto [s, category] : llvm::zip_equal(plan.storages, categories))
    if (s.start <= result.peakStep && result.peakStep <= s.end)
      result.bytes[size_t(category)] += s.size;
  for (int64_t b : result.bytes)
    result.liveBytes += b;
  return result;
}

void weft::printMemoryBreakdown(const MemoryBreakdown &breakdown,
                                llvm::raw_ostream &os, llvm::StringRef indent) {
  for (size_t c = 0; c < kNumMemoryCategories; ++c)
    if (breakdown.bytes[c])
      os << llvm::formatv("{0}{1,-18} {2,14} bytes\n", indent,
                          categoryName(MemoryCategory(c)), breakdown.bytes[c]);
  os << llvm::formatv("{0}{1,-18} {2,14} bytes (at op {3})\n", indent,
                      "live at peak", breakdown.liveBytes, breakdown.peakStep);
  os << llvm::formatv("{0}{1,-18} {2,14} bytes\n", indent, "arena",
                      breakdown.arenaBytes);
  os << llvm::formatv("{0}{1,-18} {2,14} bytes (most at any op)\n", indent,
                      "kept_activations", breakdown.maxKeptActivations);
}
