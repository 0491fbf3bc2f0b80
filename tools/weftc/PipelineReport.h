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
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace weft {

/// Whether the collective `op` runs over the main device mesh's axis
/// `axis` alone (not ZeRO's mesh).
bool collectiveOverAxis(mlir::Operation *op, int64_t axis);

/// `memory` plans each stage's arena (once, for plan emission too).
/// `device` times the collectives of an unpipelined step.
void printStageTable(mlir::ModuleOp module, const SimResult &prediction,
                     MemoryPlans &memory, const DeviceModel &device,
                     llvm::raw_ostream &os);

/// What weftc reports after a pipelined, tensor or data parallel compile.
struct ReportOptions {
  llvm::StringRef deviceModel; ///< --device-model ("" : the default)
  bool toStderr = false;       ///< the plan itself goes to stdout
  bool sixteenBit = false;     ///< --precision bf16|f16
  bool asciiTimeline = false;  ///< --timeline-ascii
  llvm::StringRef timeline;    ///< --timeline FILE ("" : none)
};

/// The stage table, the MFU line and the predicted timeline (ASCII, and a
/// Chrome trace written to a temporary file renamed over `timeline`: never
/// a partial one). `simulated`: weft-simulate-pipeline's prediction when it
/// ran (else the step is simulated here). Fails, naming the file, when the
/// trace cannot be written.
mlir::LogicalResult reportPipeline(mlir::ModuleOp module, MemoryPlans &memory,
                                   std::optional<SimResult> &&simulated,
                                   const ReportOptions &options);

/// The step's model and hardware FLOPs summed over every rank's program
/// (StepFlops.h) and the predicted step's MFU and HFU (fractions): FLOPs /
/// (step x ranks x the device's peak FLOP/s, 16-bit when `sixteenBit`)
/// (Korthikanti et al. 2022, Section 6). MFU and HFU are 0 when the step
/// or the ranks are. The sums are doubles: over all ranks they pass
/// int64's 9.2e18 at GPT-3 scale (530B at a batch of 2240: 1.45e19).
struct StepUtilization {
  double modelFlops = 0, hardwareFlops = 0;
  int64_t ranks = 0;
  double peakFlopsPerSecond = 0, mfu = 0, hfu = 0;
};
StepUtilization stepUtilization(mlir::ModuleOp module, double stepSeconds,
                                const DeviceModel &device, bool sixteenBit);

/// stepUtilization as one line.
void printUtilization(mlir::ModuleOp module, double stepSeconds,
                      const DeviceModel &device, bool sixteenBit,
                      llvm::raw_ostream &os);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_PIPELINEREPORT_H
