//===- MemoryReport.h - weftc --estimate-memory, --memory-cap --*- C++ -*-===//
//
// Each rank's planned memory by category (parameters, optimizer state,
// kept activations, ...; weft/Analysis/MemoryBreakdown.h) and its model
// states, checked against a cap.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_MEMORYREPORT_H
#define WEFT_TOOLS_WEFTC_MEMORYREPORT_H

#include "weft/Analysis/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"

namespace weft {

/// Plans each rank's memory with `options` and prints the breakdowns to
/// stdout when `print`; fails, printing them to stderr, when a rank's
/// arena exceeds `capBytes` (0: no cap).
mlir::LogicalResult checkMemory(mlir::ModuleOp module,
                                const MemoryPlanOptions &options,
                                int64_t capBytes, bool print);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_MEMORYREPORT_H
