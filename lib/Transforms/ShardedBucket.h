//===- ShardedBucket.h - ZeRO's update of one gradient bucket ---*- C++ -*-===//
//
// Private to weft-data-parallel: with `zero-stage` 1 a bucket's gradients
// are reduce-scattered instead of all-reduced, and each replica updates only
// its shard of the bucket's parameters with its shard of the optimizer state
// (Rajbhandari et al., "ZeRO", SC 2020, Section 5.1: P_os), then the
// updated shards are all-gathered back into every replica's parameters.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_TRANSFORMS_SHARDEDBUCKET_H
#define WEFT_LIB_TRANSFORMS_SHARDEDBUCKET_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace weft {

/// Where a bucket is reduced over the mesh's data axis.
struct DataAxis {
  int64_t axis = 0;     ///< its index among the mesh's axes
  int64_t replicas = 1; ///< its size, D
};

/// The first of the updates `members` in the block, after moving those
/// that precede `collective` (a gradient that arrives among the updates: a
/// tied parameter's sum received from another stage) right after it.
mlir::Operation *firstUpdateAfter(llvm::ArrayRef<mlir::Operation *> members,
                                  mlir::Operation *collective);

/// Rewrites the updates `members` (weft.sgd / weft.adamw on the bucket's
/// parameters, in ready order) of bucket `bucket` into a sharded update:
///
/// - after the bucket's last gradient `ready` (or before the first update
///   when null): the gradients flattened, concatenated and zero-padded to
///   D * s elements (s = ceil(n / D): the flat split, so no parameter's
///   shape has to divide by D), one `shard.reduce_scatter` over the data
///   axis (`weft.bucket` = `bucket`);
/// - before the first update: the shard scaled by 1/D; the parameters
///   flattened the same way and `shard.all_slice`d to this replica's s
///   elements; one update of that shard with new optimizer-state arguments
///   of s elements (`zero.bucket<k>.<state>`, replacing the members'); the
///   updated shard `shard.all_gather`ed, unpadded, split, and each part
///   `weft.assign`ed into its parameter.
///
/// The members' old optimizer-state arguments and their results are
/// removed from `func`; the new state's updates are returned.
void shardBucket(mlir::func::FuncOp func,
                 llvm::ArrayRef<mlir::Operation *> members,
                 mlir::Operation *ready, int64_t bucket, DataAxis data);

} // namespace weft

#endif // WEFT_LIB_TRANSFORMS_SHARDEDBUCKET_H
