//===- TestPrintTaskOrders.cpp - weft-test-print-task-orders --------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/TaskOrder.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace weft {
#define GEN_PASS_DEF_TESTPRINTTASKORDERS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
struct TestPrintTaskOrdersPass
    : weft::impl::TestPrintTaskOrdersBase<TestPrintTaskOrdersPass> {
  using TestPrintTaskOrdersBase::TestPrintTaskOrdersBase;

  void runOnOperation() override {
    std::optional<ScheduleKind> kind = scheduleNamed(schedule);
    if (!kind) {
      getOperation().emitError("weft-test-print-task-orders: unknown "
                               "schedule '")
          << schedule << "'";
      return signalPassFailure();
    }
    std::string error;
    auto orders =
        rankTaskOrders(*kind, ranks, microbatches, virtualStages, &error);
    std::optional<TaskOrderSimulation> sim;
    if (!orders.empty())
      sim = simulateTaskOrders(*kind, ranks, orders,
                               uniformStageTimes(*kind, virtualStages), &error);
    if (!sim) {
      getOperation().emitError("weft-test-print-task-orders: ") << error;
      return signalPassFailure();
    }
    std::string head = schedule + " P=" + std::to_string(ranks) +
                       " M=" + std::to_string(microbatches);
    int64_t chunks = chunksPerRank(*kind, virtualStages);
    for (int64_t r = 0; r < ranks; ++r) {
      llvm::outs() << head << " rank " << r << " (stages";
      for (int64_t c = 0; c < chunks; ++c)
        llvm::outs() << (c ? "," : " ") << chunkStage(*kind, ranks, r, c);
      llvm::outs() << "):";
      for (const OrderedTask &task : orders[r])
        llvm::outs() << " " << task.label();
      llvm::outs() << "\n";
    }
    llvm::outs() << head << " bubble "
                 << llvm::format("%.4f", sim->bubbleFraction())
                 << " rank-0 idle " << llvm::format("%.2f", sim->innerIdle[0])
                 << " T_F\n";
    markAllAnalysesPreserved();
  }
};
} // namespace
