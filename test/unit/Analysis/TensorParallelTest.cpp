//===- TensorParallelTest.cpp - the tensor-parallel split rules -----------===//

#include "weft/Analysis/TensorParallel.h"

#include <gtest/gtest.h>

using namespace weft;

namespace {
std::optional<Sharding> reshape(std::vector<int64_t> in,
                                std::vector<int64_t> out, Sharding s,
                                int64_t parts) {
  return reshapeSharding(in, out, s, parts);
}
} // namespace

TEST(TensorParallel, ReshapeMovesTheShardToTheHeads) {
  // [b, s, h] split on h -> [b, s, heads, dh]: the heads are split.
  EXPECT_EQ(reshape({2, 8, 32}, {2, 8, 4, 8}, Sharding::split(2), 2),
            Sharding::split(2));
  // And back.
  EXPECT_EQ(reshape({2, 8, 4, 8}, {2, 8, 32}, Sharding::split(2), 2),
            Sharding::split(2));
  // 4 heads do not split 8 ways: the shard would cut heads.
  EXPECT_EQ(reshape({2, 8, 32}, {2, 8, 4, 8}, Sharding::split(2), 8),
            std::nullopt);
  // MultiheadAttention's packed projection [s, b, 3h] -> [s, b, 3, h] with
  // 3 blocks: the shard moves to h, one block per slice.
  EXPECT_EQ(reshape({5, 2, 24}, {5, 2, 3, 8}, Sharding::split(2, 3), 2),
            Sharding::split(3));
  // Flattening the batch keeps a feature shard: [b, s, h] -> [b s, h].
  EXPECT_EQ(reshape({2, 8, 32}, {16, 32}, Sharding::split(2), 4),
            Sharding::split(1));
  // Flattening everything keeps the shard as 16 blocks of 16.
  EXPECT_EQ(reshape({2, 8, 32}, {512}, Sharding::split(2), 2),
            Sharding::split(0, 16));
  // [2, 6] with columns split 3 ways to [3, 4]: rank 0's elements (flat 0,
  // 1, 6, 7) are no regular slice of the result.
  EXPECT_EQ(reshape({2, 6}, {3, 4}, Sharding::split(1), 3), std::nullopt);
  // A replicated value stays replicated.
  EXPECT_EQ(reshape({2, 8}, {16}, Sharding::replicated(), 2),
            Sharding::replicated());
}

TEST(TensorParallel, LocalShapeDividesTheShardedDimension) {
  EXPECT_EQ(localShape({2, 8, 96}, Sharding::split(2, 3), 2),
            (llvm::SmallVector<int64_t>{2, 8, 48}));
  EXPECT_EQ(localShape({2, 8}, Sharding::replicated(), 2),
            (llvm::SmallVector<int64_t>{2, 8}));
}
