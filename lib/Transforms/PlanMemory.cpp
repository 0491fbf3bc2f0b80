//===- PlanMemory.cpp - weft-plan-memory: report a rank's memory ----------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/MemoryBreakdown.h"

#include "llvm/Support/FormatVariadic.h"

namespace weft {
#define GEN_PASS_DEF_PLANMEMORY
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The name of the op that defines `v`, or "argument".
llvm::StringRef producerName(Value v) {
  Operation *def = v.getDefiningOp();
  return def ? def->getName().getStringRef() : llvm::StringRef("argument");
}

struct PlanMemoryPass : weft::impl::PlanMemoryBase<PlanMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MemoryPlanOptions options;
    if (!activationDtype.empty()) {
      std::optional<int64_t> bytes = activationElementBytes(activationDtype);
      if (!bytes) {
        func.emitError() << "weft-plan-memory: activation-dtype '"
                         << activationDtype << "' is not f32, f16 or bf16";
        return signalPassFailure();
      }
      options.activationElementBytes = *bytes;
    }
    MemoryPlan plan = planMemory(func, options);
    MemoryBreakdown breakdown = breakDownMemory(func, plan);
    std::string prefix = ("memory @" + func.getSymName() + ": ").str();
    if (listKept)
      for (const Storage &s : plan.storages)
        if (categoryOf(s) == MemoryCategory::KeptActivations)
          llvm::errs() << prefix << "kept " << producerName(s.value) << " "
                       << s.value.getType() << " " << s.size << "\n";
    for (size_t c = 0; c < kNumMemoryCategories; ++c)
      if (breakdown.bytes[c])
        llvm::errs() << prefix << categoryName(MemoryCategory(c)) << " "
                     << breakdown.bytes[c] << "\n";
    llvm::errs() << llvm::formatv("{0}live_at_peak {1} at op {2}\n", prefix,
                                  breakdown.liveBytes, breakdown.peakStep);
    llvm::errs() << prefix << "arena " << breakdown.arenaBytes << "\n";
    llvm::errs() << prefix << "max_kept_activations "
                 << breakdown.maxKeptActivations << "\n";
  }
};

} // namespace
