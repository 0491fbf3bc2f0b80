//===- PipelineReport.h - weftc's per-stage table -------------*- C++ -*-===//
//
// What `weftc --pipeline-parallel P` (or `--tensor-parallel T`) prints
// about the plan it wrote: per stage, the forward ops it holds, its
// parameters, its planned peak arena bytes, its predicted busy time and the
// bytes it sends and receives per step, with T > 1 also its all-reduces and
// the bytes a rank sends in them; then the predicted step time and (for a
// pipeline) the bubble fraction, next to the schedule's for uniform stages
// (TaskOrder.h's uniformBubbleFraction: (P - 1) / (M + P - 1) for GPipe and
// 1F1B).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_PIPELINEREPORT_H
#define WEFT_TOOLS_WEFTC_PIPELINEREPORT_H

#include "weft/Analysis/MemoryPlan.h"
#include "weft/Analysis/PipelineSimulation.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace weft {

/// `memory` plans each stage's arena (once, for plan emission too).
/// `device` times the collectives of an unpipelined step.
void printStageTable(mlir::ModuleOp module, const SimResult &prediction,
                     MemoryPlans &memory, const DeviceModel &device,
                     llvm::raw_ostream &os);

/// The step's model and hardware FLOPs summed over every rank's program
/// (StepFlops.h) and the predicted step's MFU and HFU: FLOPs / (step x
/// ranks x the device's peak, 16-bit when `sixteenBit`) (Korthikanti et
/// al. 2022, Section 6). One line.
void printUtilization(mlir::ModuleOp module, double stepSeconds,
                      const DeviceModel &device, bool sixteenBit,
                      llvm::raw_ostream &os);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_PIPELINEREPORT_H
