//===- GradientBuckets.h - DDP's gradient bucket assignment -----*- C++ -*-===//
//
// Which gradients share one data-parallel all-reduce. PyTorch's
// DistributedDataParallel (Li et al., "PyTorch Distributed", VLDB 2020,
// Section 3.2.3; torch/csrc/distributed/c10d/reducer.cpp,
// compute_bucket_assignment_by_size) walks the parameters in the order
// their gradients become ready (the reverse of the forward's order of use)
// and fills one bucket per key (device and dtype; in weft: pipeline stage
// and dtype): a tensor joins the open bucket of its key, and the bucket
// closes once its size reaches the limit, so a bucket overshoots the limit
// by at most its last tensor. The first bucket of each key is limited to
// `firstCapBytes` (DDP's 1 MiB: the first all-reduce starts early in the
// backward), the others to `capBytes` (`bucket_cap_mb`, 25 MiB).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_GRADIENTBUCKETS_H
#define WEFT_ANALYSIS_GRADIENTBUCKETS_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace weft {

/// DDP's default first-bucket limit (torch.distributed's
/// _DEFAULT_FIRST_BUCKET_BYTES), bytes.
inline constexpr int64_t kFirstBucketBytes = 1 << 20;

/// The data-parallel defaults that weft-data-parallel, the pipeline's
/// options, weftc's flags and the layout search share:
/// - the bucket limit, MiB (DDP's bucket_cap_mb; --bucket-cap-mb);
inline constexpr double kBucketCapMb = 25.0;
/// - under ZeRO, the size below which a parameter stays replicated, KiB
///   (MindSpore's optimizer-parallel threshold;
///   --optimizer-shard-threshold).
inline constexpr double kShardThresholdKb = 64.0;

/// One gradient to reduce: its size and the key of the buckets it may join
/// (tensors of different keys never share a bucket).
struct BucketTensor {
  int64_t bytes = 0;
  int64_t key = 0;
};

/// The buckets over `tensors`, given in ready order (the first tensor's
/// gradient is produced first): each bucket the indices of its tensors in
/// ready order; buckets ordered by their first tensor. The first bucket of
/// a key is limited to min(firstCapBytes, capBytes), later ones to
/// capBytes; a limit <= 0 puts each tensor in a bucket of its own.
std::vector<std::vector<size_t>>
assignGradientBuckets(llvm::ArrayRef<BucketTensor> tensors, int64_t capBytes,
                      int64_t firstCapBytes = kFirstBucketBytes);

} // namespace weft

#endif // WEFT_ANALYSIS_GRADIENTBUCKETS_H
