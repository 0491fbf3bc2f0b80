//===- GradientBucketsTest.cpp - DDP's bucket assignment ------------------===//
//
// Expected buckets are torch.distributed._compute_bucket_assignment_by_size's
// (torch 1.13) on the same sizes, limits [1 MiB, cap].
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/GradientBuckets.h"

#include <gtest/gtest.h>

using namespace weft;

namespace {
constexpr int64_t MiB = 1 << 20;
using Buckets = std::vector<std::vector<size_t>>;
} // namespace

TEST(GradientBuckets, FirstBucketClosesAtOneMiBTheRestAtTheCap) {
  // 1.2 MB, 40 B, 0.4 MB, 28 MB, 4 B: the first tensor alone reaches
  // 1 MiB; the next bucket closes when the 28 MB tensor overshoots 25 MiB.
  // torch: [[0], [1, 2, 3], [4]].
  std::vector<BucketTensor> t = {
      {1200000, 0}, {40, 0}, {400000, 0}, {28000000, 0}, {4, 0}};
  EXPECT_EQ(assignGradientBuckets(t, 25 * MiB),
            (Buckets{{0}, {1, 2, 3}, {4}}));
}

TEST(GradientBuckets, KeysNeverShareABucket) {
  // torch: [[0], [1, 2, 4], [3]] for float32 sizes 1.2 MB, 40 B, 0.4 MB,
  // 28 MB and a float64 tensor of 40 B at index 3 (its own key).
  std::vector<BucketTensor> t = {
      {1200000, 0}, {40, 0}, {400000, 0}, {40, 1}, {28000000, 0}};
  EXPECT_EQ(assignGradientBuckets(t, 25 * MiB),
            (Buckets{{0}, {1, 2, 4}, {3}}));
}

TEST(GradientBuckets, BucketsAreOrderedByTheirFirstTensor) {
  // Key 1's first bucket closes before key 0's; torch: [[0, 2], [1], [3]].
  std::vector<BucketTensor> t = {{8, 0}, {MiB, 1}, {MiB, 0}, {8, 1}};
  EXPECT_EQ(assignGradientBuckets(t, 25 * MiB),
            (Buckets{{0, 2}, {1}, {3}}));
}

TEST(GradientBuckets, ACapBelowOneMiBLimitsTheFirstBucketToo) {
  std::vector<BucketTensor> t = {{300, 0}, {300, 0}, {300, 0}, {300, 0}};
  EXPECT_EQ(assignGradientBuckets(t, 600), (Buckets{{0, 1}, {2, 3}}));
}

TEST(GradientBuckets, ACapOfZeroGivesEachTensorItsOwnBucket) {
  std::vector<BucketTensor> t = {{8, 0}, {8, 0}, {8, 1}};
  EXPECT_EQ(assignGradientBuckets(t, 0), (Buckets{{0}, {1}, {2}}));
}

TEST(GradientBuckets, NoTensorsNoBuckets) {
  EXPECT_TRUE(assignGradientBuckets({}, 25 * MiB).empty());
}
