//===- MemoryReport.cpp - weftc --estimate-memory, --memory-cap -----------===//

#include "MemoryReport.h"

#include "weft/Analysis/MemoryBreakdown.h"
#include "weft/Analysis/ModelStates.h"
#include "weft/Analysis/PipelineSimulation.h"
#include "weft/Analysis/StepFlops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

LogicalResult weft::checkMemory(ModuleOp module,
                                const MemoryPlanOptions &options,
                                int64_t capBytes, bool print) {
  bool over = false;
  std::string text;
  llvm::raw_string_ostream report(text);
  for (auto [rank, func] : llvm::enumerate(rankFunctions(module))) {
    MemoryPlan plan = planMemory(func, options);
    MemoryBreakdown breakdown = breakDownMemory(func, plan);
    bool exceeds = capBytes > 0 && breakdown.arenaBytes > capBytes;
    over |= exceeds;
    report << "rank " << rank << (exceeds ? " (exceeds --memory-cap)" : "")
           << ":\n";
    printMemoryBreakdown(breakdown, report);
    printModelStates(modelStates(func), report);
    StepFlops flops = stepFlops(func);
    report << llvm::formatv("  {0,-22} {1,14} FLOPs (matrix products of a "
                            "step)\n  {2,-22} {3,14} FLOPs (with recompute)\n",
                            "model_flops", flops.model, "hardware_flops",
                            flops.hardware);
  }
  if (over) {
    llvm::errs() << "weftc: a rank's planned memory exceeds --memory-cap "
                 << capBytes << " bytes\n"
                 << text;
    return failure();
  }
  if (print)
    llvm::outs() << text;
  return success();
}
