//===- ShardedBucket.h - ZeRO's update of one gradient bucket ---*- C++ -*-===//
//
// Private to weft-data-parallel. With `zero-stage` >= 1 a bucket's
// gradients are reduce-scattered instead of all-reduced, and each replica
// updates only its shard of every parameter with its shard of the
// optimizer state (Rajbhandari et al., "ZeRO", SC 2020, Section 5: P_os,
// P_os+g, P_os+g+p).
//
// The flat split: a tensor of n elements is flattened and zero-padded to
// D s elements, s = ceil(n / D), and replica r holds elements [r s, r s + s)
// (with ZeRO groups of S replicas, D is S and r the rank's place in its
// group; the groups' pieces are then all-reduced across groups).
// No parameter's shape has to divide by D, and the padding is at most D - 1
// elements per tensor. A bucket's tensors are laid out rank-major, [D, S]
// with S the sum of their s (each tensor a [D, s] column block), so one
// reduce-scatter of the bucket hands each replica the concatenation of its
// shards of every tensor, and one all-gather of that concatenation
// rebuilds them all.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_TRANSFORMS_SHARDEDBUCKET_H
#define WEFT_LIB_TRANSFORMS_SHARDEDBUCKET_H

#include "weft/Dialect/Weft/IR/DeviceMesh.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace weft {

/// Where a bucket is reduced over the mesh's data axis, and where ZeRO's
/// pieces live: over the whole data axis, or (MindSpore's shard_size) over
/// groups of S replicas on the zero mesh (DeviceMesh.h), their pieces then
/// all-reduced across the D / S groups.
struct DataAxis {
  int64_t axis = 0;     ///< its index among the mesh's axes
  int64_t replicas = 1; ///< its size, D
  llvm::StringRef grid = kMeshSymbol; ///< the grid ZeRO's collectives use
  int64_t shardAxis = 0;              ///< a group's axis on it
  int64_t pieces = 1;                 ///< the group's size: D or S
  int64_t replicaAxis = -1; ///< the axis across groups, -1: one group
  /// Each replica's gradients are its 1/D share already (weft-autodiff's
  /// seed): their sum over the replicas is their mean, not scaled.
  bool seeded = false;
};

/// An update (weft.sgd / weft.adamw) of a bucket and its gradient's parts.
struct BucketMember {
  mlir::Operation *update = nullptr;
  /// The gradient's contributions of micro-batches 0 .. M-1, whose sum
  /// (times 1/M when `scaledAfterSum`) is the gradient
  /// (weft-accumulate-microbatches); empty when the gradient is not such
  /// a sum (one micro-batch, or a tied parameter's gradient that adds
  /// another stage's sum).
  llvm::SmallVector<mlir::Value> microBatchGrads;
  /// The sum is scaled by 1/M after it: weft-autodiff did not seed each
  /// backward with its share (hand-written IR).
  bool scaledAfterSum = false;
};

/// The op among the defining ops of `values` that comes last in the block
/// (constants and block arguments do not count); null when none.
mlir::Operation *latestDef(mlir::ValueRange values);

/// The first of the updates `members` in the block, after moving those
/// that precede `collective` (a gradient that arrives among the updates: a
/// tied parameter's sum received from another stage) right after it.
mlir::Operation *firstUpdateAfter(llvm::ArrayRef<mlir::Operation *> members,
                                  mlir::Operation *collective);

/// MindSpore's optimizer-parallel schedule for stages 1 and 2 (its
/// level1/level2): the parameters stay pieces between steps, and the
/// updated pieces are all-gathered at the start of the next step's
/// forward instead of after the update, so the gather overlaps the
/// forward rather than ending the step.
struct Prefetch {
  bool enabled = false;
  /// Per pipeline stage, where its next bucket's gather is posted: first
  /// the stage's first op that reads a parameter; each bucket's gather
  /// then goes before the one posted before it, so buckets (in ready
  /// order, the reverse of the forward's) are posted in the order the
  /// forward reads them.
  llvm::DenseMap<int64_t, mlir::Operation *> at;
};

/// Rewrites bucket `bucket`'s updates (in ready order; `ready`, the op
/// producing the last gradient, or null) into ZeRO stage `stage`'s:
///
/// - the gradients' sum over the data axis, this replica's shard of it:
///   stage 1, one `shard.reduce_scatter` right after `ready`; stages 2
///   and 3, when every member has micro-batch parts, one per micro-batch
///   right after that micro-batch's last part, the shards summed (so no
///   whole gradient is accumulated across micro-batches), else as stage 1;
/// - before the first update: the shard scaled by 1/D (unless
///   `data.seeded`; and by 1/M when summed per micro-batch and
///   `scaledAfterSum`) and split per
///   parameter; each parameter's shard (stage 1, 2: `shard.all_slice` of
///   it; stage 3: the parameter argument itself, see shardParameter)
///   updated with optimizer state of its shard's size (the state arguments
///   keep their names and gain `weft.flat_shard`);
/// - stages 1 and 2: the updated shards `shard.all_gather`ed (one per
///   bucket), unpadded, reshaped and `weft.assign`ed into the parameters;
///   with `prefetch`, the parameter arguments are pieces updated in place,
///   gathered at the step's start instead (prefetchParameters).
///
/// Collectives carry `weft.bucket` = `bucket`. The members, their old state
/// arguments and results are replaced.
void shardBucket(mlir::func::FuncOp func, llvm::ArrayRef<BucketMember> members,
                 mlir::Operation *ready, int64_t bucket, int64_t stage,
                 DataAxis data, Prefetch &prefetch);

/// Prefetch's parameters: each argument of `params` becomes its flat piece
/// (type [s], `weft.flat_shard` = its shape); one `shard.all_gather` of
/// their concatenated pieces is posted before `at` (which then moves to the
/// gather's first op), and each parameter's column of the
/// result is sliced, unpadded and reshaped right before the first op that
/// reads it, so the gather's wait sinks to that op. Every reader on
/// pipeline stage `stage` but an update reads the whole parameter; a tied
/// parameter read on two stages is gathered by each stage's bucket (the
/// argument retyped by the first).
void prefetchParameters(mlir::func::FuncOp func,
                        llvm::ArrayRef<mlir::BlockArgument> params,
                        int64_t stage, int64_t bucket, DataAxis data,
                        mlir::Operation *&at);

/// ZeRO stage 3's parameter: argument `param` becomes its flat shard (type
/// [s], `weft.flat_shard` = its shape) and every op that reads it but an
/// update gets its own `shard.all_gather` right before it, with the op's
/// task, so the whole parameter lives only around each use (forward and
/// backward, per micro-batch). Does nothing when `param` is already
/// sharded (a tied parameter's second update).
void shardParameter(mlir::func::FuncOp func, mlir::BlockArgument param,
                    DataAxis data);

} // namespace weft

#endif // WEFT_LIB_TRANSFORMS_SHARDEDBUCKET_H
