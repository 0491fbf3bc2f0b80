//===- TestPrintMemory.cpp - print the MemoryPlan of a function -----------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/MemoryPlan.h"

#include "llvm/Support/raw_ostream.h"

namespace weft {
#define GEN_PASS_DEF_TESTPRINTMEMORY
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
const char *kindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Input:
    return "input";
  case BufferKind::Param:
    return "param";
  case BufferKind::State:
    return "state";
  case BufferKind::OptimizerState:
    return "optimizer_state";
  case BufferKind::Constant:
    return "constant";
  case BufferKind::Activation:
    return "activation";
  }
  return "?";
}

struct TestPrintMemoryPass
    : weft::impl::TestPrintMemoryBase<TestPrintMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MemoryPlan plan = planMemory(func);
    for (auto [i, s] : llvm::enumerate(plan.storages)) {
      llvm::errs() << "memory @" << func.getSymName() << ": storage " << i
                   << " " << kindName(s.kind) << " offset=" << s.offset
                   << " bytes=" << s.bytes << " live=[" << s.start << ","
                   << s.end << "]";
      // Slot placement: the micro-batch a storage is of, and its slots.
      if (s.microBatch >= 0)
        llvm::errs() << " micro_batch=" << s.microBatch
                     << (s.carried() ? " slots=" + std::to_string(s.slotGroup)
                                     : " transient");
      llvm::errs() << "\n";
    }
    for (auto [g, slots] : llvm::enumerate(plan.slots))
      llvm::errs() << "memory @" << func.getSymName() << ": slots " << g
                   << " count=" << slots.count << " bytes=" << slots.bytes
                   << "\n";
    llvm::errs() << "memory @" << func.getSymName()
                 << ": arena_bytes=" << plan.arenaBytes << "\n";
    markAllAnalysesPreserved();
  }
};
} // namespace
