//===- Partition.h - contiguous pipeline partitioning ----------*- C++ -*-===//
//
// Splits a topologically ordered sequence of work items (ops or layers) into
// P contiguous stages so that the slowest stage is as fast as possible: the
// "linear partition" / bottleneck problem. Stage time is the sum of its
// items' compute costs plus the cost of sending what crosses its boundaries
// (the cut after item i costs cut[i], charged to both neighbouring stages,
// since the sender and the receiver both spend it).
//
// Solved exactly by dynamic programming over (items, stages) in O(P n^2)
// time, about O(n^2) for costs >= 0 (a stage's last start is searched only
// while its compute alone stays under the best bottleneck found) (Skiena,
// "The Algorithm Design Manual", 8.5 "The Partition Problem";
// torchgpipe's `balance` solves the same bottleneck objective with the
// block-partition algorithm of Barany & Grinberg, an approximation).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_PARTITION_H
#define WEFT_ANALYSIS_PARTITION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace weft {

struct Partition {
  /// Stage s holds items [starts[s], starts[s+1]); starts[0] = 0 and a final
  /// entry equals the item count.
  llvm::SmallVector<int64_t> starts;
  /// max over stages of its stage time (units of the inputs, e.g. seconds).
  double bottleneck = 0;
};

/// Time of stage [begin, end): compute of its items plus the cuts at its two
/// boundaries (none before the first item or after the last).
double stageTime(llvm::ArrayRef<double> compute, llvm::ArrayRef<double> cut,
                 int64_t begin, int64_t end);

/// The contiguous partition of `compute` (n >= stages >= 1 items; costs
/// >= 0) into `stages` non-empty stages minimising the bottleneck. `cut[i]`
/// is the cost of a boundary after item i (size n - 1, or empty for none).
Partition partitionBottleneck(llvm::ArrayRef<double> compute,
                              llvm::ArrayRef<double> cut, int64_t stages);

/// A manual partition from per-stage item counts (torchgpipe's `balance`);
/// the counts must be positive and sum to the item count.
Partition partitionFromBalance(llvm::ArrayRef<double> compute,
                               llvm::ArrayRef<double> cut,
                               llvm::ArrayRef<int64_t> balance);

/// Pipeline bubble fraction of GPipe and 1F1B with p stages and m
/// micro-batches, (p - 1) / (m + p - 1); interleaved 1F1B with v model
/// chunks per rank, (p - 1) / (v m + p - 1) (Narayanan et al., 2021;
/// Korthikanti et al., 2022).
double bubbleFraction(int64_t stages, int64_t microbatches, int64_t chunks = 1);

} // namespace weft

#endif // WEFT_ANALYSIS_PARTITION_H
