//===- MemoryBreakdown.h - what a rank's memory holds at its peak -*- C++ -*-===//
//
// Splits the bytes a planned function holds at its busiest step into the
// categories Megatron-LM and DeepSpeed users reason in (Korthikanti et al.,
// "Reducing Activation Recomputation in Large Transformer Models", 2022, §4;
// Rajbhandari et al., "ZeRO", 2020, §3):
//
// - parameters, optimizer state (Adam moments, momentum), model state
//   (batch-norm statistics), inputs, constants: arguments and constants,
//   live all step;
// - activations kept for backward: results of forward ops that a backward
//   op reads (per micro-batch in flight, what the schedule decides);
// - gradients: results of backward ops (activation gradients and the
//   accumulated parameter gradients);
// - temporaries: forward results no backward op reads;
// - communication: receive buffers of pipeline transfers.
//
// The peak step is the step with the most live bytes (storages are counted
// at their size, without alignment padding); the arena, which also holds
// fragmentation, is at least that.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_MEMORYBREAKDOWN_H
#define WEFT_ANALYSIS_MEMORYBREAKDOWN_H

#include "weft/Analysis/MemoryPlan.h"

#include "llvm/Support/raw_ostream.h"

#include <array>
#include <vector>
#include <cstdint>

namespace weft {

enum class MemoryCategory {
  Parameters,
  OptimizerState,
  ModelState,
  Inputs,
  Constants,
  KeptActivations,
  Gradients,
  Temporaries,
  Communication,
};
inline constexpr size_t kNumMemoryCategories = 9;

/// Short name of a category ("parameters", "kept_activations", ...).
llvm::StringRef categoryName(MemoryCategory category);

struct MemoryBreakdown {
  /// Bytes per category at the peak step, indexed by MemoryCategory.
  std::array<int64_t, kNumMemoryCategories> bytes{};
  int64_t peakStep = 0;     ///< the step (op index) with the most live bytes
  int64_t liveBytes = 0;    ///< the sum of `bytes`
  int64_t arenaBytes = 0;   ///< the planned arena (>= liveBytes)
  /// The most kept-activation bytes live at any step (not necessarily the
  /// peak step): the micro-batches in flight times one's activations.
  int64_t maxKeptActivations = 0;
  int64_t at(MemoryCategory c) const { return bytes[size_t(c)]; }
};

/// The category of one storage of a memory plan.
MemoryCategory categoryOf(const Storage &storage);

/// Bytes live at each of a plan's steps (index: step, 0 to numSteps - 1):
/// all its storages', and its kept activations' alone.
struct LiveBytes {
  std::vector<int64_t> all, kept;
};
/// `plan`'s live bytes by step; `categories[i]` is categoryOf storage i.
LiveBytes liveBytesByStep(const MemoryPlan &plan,
                          llvm::ArrayRef<MemoryCategory> categories);

/// The breakdown of `plan`, the memory plan of `func`.
MemoryBreakdown breakDownMemory(mlir::func::FuncOp func, const MemoryPlan &plan);

/// One line per non-empty category, then the total and the arena.
void printMemoryBreakdown(const MemoryBreakdown &breakdown,
                          llvm::raw_ostream &os, llvm::StringRef indent = "  ");

} // namespace weft

#endif // WEFT_ANALYSIS_MEMORYBREAKDOWN_H
