//===- PlanOutput.h - weftc's --emit=plan and --emit=plan-json -*- C++ -*-===//
//
// Writes the plan of a compiled module (docs/plan-format.md), or with
// `views` each rank's view of it (PlanView.h), timing the emission and the
// printing under `timing` (--mlir-timing).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PLANOUTPUT_H
#define WEFT_TOOLS_WEFTC_PLANOUTPUT_H

#include "weft/Analysis/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/raw_ostream.h"

namespace weft {

/// `source` is the ONNX model the plan loads weights from (made absolute);
/// `viewRank` -1 prints every rank's view, else that rank's;
/// `taskBodies` writes programs' micro-batch work as task bodies where it
/// repeats (docs/plan-format.md). Fails, with a
/// message, on IR the plan cannot express or a rank the plan lacks.
mlir::LogicalResult writePlan(mlir::ModuleOp module, llvm::StringRef source,
                              bool views, int64_t viewRank, bool taskBodies,
                              MemoryPlans &memory, mlir::TimingScope &timing,
                              llvm::raw_ostream &os);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_PLANOUTPUT_H
