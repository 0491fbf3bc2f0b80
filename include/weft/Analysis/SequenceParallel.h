//===- SequenceParallel.h - Megatron sequence-parallel regions -*- C++ -*-===//
//
// Which values of a tensor-parallel forward graph (the output of
// weft-split-tensor-parallel) a sequence-parallel program shards along the
// sequence (Korthikanti et al., "Reducing Activation Recomputation in Large
// Transformer Models", 2022, Section 4.2.2 and Figure 5).
//
// Between Megatron's g (the all-reduce after a row-parallel linear or a
// vocab-parallel embedding) and the next f (copy_to_tensor_parallel before
// a column-parallel linear), tensor parallelism leaves every rank computing
// the same LayerNorms, dropouts, bias adds and residual adds on the whole
// [b, s, h] activation. Those ops are independent along the sequence, so
// each of the T ranks can compute s / T of it: g becomes a reduce-scatter
// along the sequence, f an all-gather, and the region in between holds 1/T
// of every activation.
//
// The region is found by propagation, not by names: it starts at the token
// embedding (a gather by a [batch, sequence] model input, whose result's
// dimension 1 is the sequence) and grows through the ops that keep a
// sequence shard local (elementwise ops with numpy broadcasting, dropout,
// LayerNorm over later axes, reshapes and transposes that move the shard
// whole), across each all-reduce it reaches backwards (a g) and stopping at
// every other op (f's copy, a matmul, the loss): those get the value
// all-gathered. Replicated operands aligned with the sequence (position
// embeddings) are sliced to the rank's part; those broadcast along it
// (LayerNorm weights, biases) get f, so their gradients, partial sums over
// each rank's positions, are summed (Megatron's all-reduce of sequence-
// parallel parameters' gradients).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_SEQUENCEPARALLEL_H
#define WEFT_ANALYSIS_SEQUENCEPARALLEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace weft {

/// The outcome of the analysis. Dimensions index the full (unsharded)
/// shapes; every shard is 1/T of its dimension, rank t holding the t-th
/// contiguous part.
struct SequenceParallelRegion {
  /// Values the region holds sharded, and the sequence dimension of each.
  llvm::MapVector<mlir::Value, int64_t> sharded;
  /// The region's ops (every result in `sharded`), in op order; all-reduces
  /// among them become reduce-scatters.
  llvm::SetVector<mlir::Operation *> ops;
  /// Replicated values region ops read along the sequence (a position
  /// embedding): each rank slices its part (`shard.all_slice`).
  llvm::MapVector<mlir::Value, int64_t> slices;
  /// Replicated values region ops broadcast along the sequence that depend
  /// on a parameter (LayerNorm weights, biases): they get f.
  llvm::SetVector<mlir::Value> broadcasts;
  /// Sharded values some op outside the region reads (f's copy, the loss):
  /// all-gathered for it.
  llvm::SetVector<mlir::Value> gathers;
};

/// Finds the sequence-parallel region of `func` (a tensor-parallel forward
/// graph) for `parts` ranks. Fails, with an error at the op, when there is
/// no token embedding to find the sequence from, when `parts` does not
/// divide a sequence length, or when two operands of one op disagree on
/// where the sequence is.
llvm::FailureOr<SequenceParallelRegion>
analyzeSequenceParallel(mlir::func::FuncOp func, int64_t parts);

} // namespace weft

#endif // WEFT_ANALYSIS_SEQUENCEPARALLEL_H
