//===- PlanOutput.cpp - weftc's --emit=plan and --emit=plan-json ----------===//

#include "PlanOutput.h"

#include "weft/Target/Plan/EmitPlan.h"
#include "weft/runtime/PlanView.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

using namespace mlir;

LogicalResult weft::writePlan(ModuleOp module, llvm::StringRef source,
                              bool views, int64_t viewRank, bool taskBodies,
                              MemoryPlans &memory, TimingScope &timing,
                              llvm::raw_ostream &os) {
  llvm::SmallString<256> path(source);
  llvm::sys::fs::make_absolute(path);
  TimingScope step = timing.nest("weftc: plan emission");
  FailureOr<PlanParts> parts = emitPlanParts(
      module, {path.str().str(), sha256File(path)}, &memory, {taskBodies});
  if (failed(parts))
    return failure();
  step.stop();
  TimingScope printing = timing.nest("weftc: plan printing");
  if (!views) {
    printPlan(std::move(*parts), os);
    return success();
  }
  // The plan is weftc's own, so its views are well-formed: the rank is the
  // one thing to check.
  int64_t ranks = parts->plan["rank_programs"].size();
  if (viewRank >= ranks || viewRank < -1) {
    llvm::errs() << "weftc: --view-rank " << viewRank << ": the plan has "
                 << ranks << " rank(s)\n";
    return failure();
  }
  printPlan(rt::planView(planJson(*parts), viewRank, "plan"), os);
  return success();
}
