//===- PartitionCosts.h - what the pipeline partitioner weighs --*- C++ -*-===//
//
// The costs weft-partition-pipeline balances, in one place for the pass and
// for the layout estimate that predicts its stages (tools/weftc's
// LayoutEstimate: the end stages' embedding and head). An item is a
// forward op; its cost is its roofline time on the device model, three
// times over when it reaches a parameter (its forward, input gradient and
// weight gradient, each a GEMM of the forward's FLOPs in a Linear layer),
// once otherwise; a cut
// costs the transfer of every value that crosses it, twice when a
// gradient comes back through it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_PARTITIONCOSTS_H
#define WEFT_ANALYSIS_PARTITIONCOSTS_H

#include "weft/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

namespace weft {

struct PartitionCosts {
  /// Every op of the function's body but constants and the terminator, in
  /// program (topological) order.
  llvm::SmallVector<mlir::Operation *> items;
  /// Seconds of each item (size n).
  llvm::SmallVector<double> compute;
  /// Seconds of a cut after item i (size n - 1).
  llvm::SmallVector<double> cut;
};

/// The partitioner's costs of `func`, a forward (every op of kind
/// Forward: before autodiff), on `device`.
PartitionCosts partitionCosts(mlir::func::FuncOp func,
                              const DeviceModel &device);

/// The same costs with items grouped by residualSegments (the cuts where
/// one activation alone is live: between a transformer's blocks and their
/// halves), the only cuts the partitioner makes in a model of at least as
/// many repeated layers as stages: `compute` per segment, `cut` after each
/// but the last; `items` left empty.
PartitionCosts segmentCosts(mlir::func::FuncOp func, const DeviceModel &device);

/// The share of the compute, in [0, 1], summing to 1, of each of `stages`
/// stages when the partitioner splits `costs` (partitionBottleneck); empty
/// when there are fewer items than stages or no compute.
llvm::SmallVector<double> stageShares(const PartitionCosts &costs,
                                      int64_t stages);

} // namespace weft

#endif // WEFT_ANALYSIS_PARTITIONCOSTS_H
