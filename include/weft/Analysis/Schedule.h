//===- Schedule.h - micro-batch task order of a pipeline stage --*- C++ -*-===//
//
// The order in which one pipeline stage runs its forward tasks F(i) and
// backward tasks B(i), i the micro-batch, under a pipeline schedule:
//
// - GPipe (Huang et al., 2019; torchgpipe, Kim et al. 2020, Algorithm 1):
//   every forward F(0) .. F(M-1), then every backward in reverse micro-batch
//   order B(M-1) .. B(0). A stage holds the activations of all M
//   micro-batches at the end of the forward.
// - 1F1B (PipeDream-Flush; Narayanan et al., "Memory-Efficient Pipeline-
//   Parallel DNN Training", ICML 2021): stage s of P first runs
//   w = min(P - s - 1, M) warm-up forwards, then alternates one forward and
//   one backward (steady state), then runs the remaining backwards
//   (cool-down), in micro-batch order. A stage holds at most P - s
//   micro-batches' activations.
//
// Both have the same bubble, (P - 1) / (M + P - 1) of the step for uniform
// stages; 1F1B needs less activation memory.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_SCHEDULE_H
#define WEFT_ANALYSIS_SCHEDULE_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace weft {

/// The pipeline schedules weft compiles (weft-schedule); the orders of all
/// but GPipe and 1F1B are TaskOrder.h's.
enum class ScheduleKind { GPipe, OneFOneB, Interleaved, ZBH1, ZBH2, ZBV };

/// A schedule by name (scheduleName's); std::nullopt for others.
std::optional<ScheduleKind> scheduleNamed(llvm::StringRef name);
/// "gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2", "zb-v".
llvm::StringRef scheduleName(ScheduleKind kind);

struct StageTask {
  bool backward = false;
  int64_t microBatch = 0;
  /// "F3" / "B3": the labels of the torchgpipe paper's figures.
  std::string label() const;
  bool operator==(const StageTask &o) const {
    return backward == o.backward && microBatch == o.microBatch;
  }
};

/// The 2M tasks of `stage` (0-based) of `stages`, in execution order, for
/// GPipe or 1F1B (TaskOrder.h's rankTaskOrders has every schedule).
llvm::SmallVector<StageTask> stageTasks(ScheduleKind kind, int64_t stage,
                                        int64_t stages, int64_t microbatches);

} // namespace weft

#endif // WEFT_ANALYSIS_SCHEDULE_H
