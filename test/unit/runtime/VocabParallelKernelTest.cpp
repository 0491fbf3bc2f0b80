//===- VocabParallelKernelTest.cpp - vocab shards sum to the whole --------===//
//
// The vocab-parallel kernels on two shards of a vocabulary, combined as the
// plan's all-reduces combine them, equal the whole-vocabulary kernels:
// softmax_cross_entropy (loss, log-probabilities, gradient) and gather /
// gather_grad (Megatron-LM's vocab_parallel_cross_entropy and
// VocabParallelEmbedding).
//
//===----------------------------------------------------------------------===//

#include "HostKernel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

using F64 = test::Host<double>;
using I64 = test::Host<int64_t>;
using test::launch;

/// Columns [begin, begin + width) of a row-major [rows, cols] matrix.
F64 columns(const F64 &m, int64_t begin, int64_t width) {
  F64 out({m.shape[0], width});
  for (int64_t r = 0; r < m.shape[0]; ++r)
    for (int64_t c = 0; c < width; ++c)
      out.v[r * width + c] = m.v[r * m.shape[1] + begin + c];
  return out;
}

} // namespace

TEST(VocabParallelKernels, CrossEntropyOverShardsEqualsTheWhole) {
  F64 scores({3, 6}, {0.3, -1.2, 2.0, 0.5, 0.1, -0.4, //
                      1.5, 0.2, -0.3, 3.1, -2.0, 0.7, //
                      -0.6, 0.9, 0.4, -1.1, 2.2, 1.3});
  I64 labels({3}, {1, 3, 5});
  F64 loss({}), logp({3, 6}), dloss({}, {1.0}), grad({3, 6});
  launch("softmax_cross_entropy", {scores, labels}, {loss, logp},
         {{"reduction", "mean"}});
  launch("softmax_cross_entropy_grad", {logp, labels, dloss}, {grad},
         {{"reduction", "mean"}});

  // Two ranks of 3 classes: the row maxima and the stats all-reduced.
  F64 max({3, 1});
  for (int64_t r = 0; r < 3; ++r)
    max.v[r] = *std::max_element(&scores.v[r * 6], &scores.v[r * 6 + 6]);
  F64 sums({3, 2});
  std::vector<F64> local;
  for (int64_t rank = 0; rank < 2; ++rank) {
    local.push_back(columns(scores, 3 * rank, 3));
    F64 stats({3, 2});
    launch("vocab_parallel_cross_entropy_stats", {local[rank], max, labels},
           {stats}, {{"start", 3 * rank}});
    for (int64_t k = 0; k < 6; ++k)
      sums.v[k] += stats.v[k];
  }
  for (int64_t rank = 0; rank < 2; ++rank) {
    F64 rankLoss({}), rankLogp({3, 3}), rankGrad({3, 3});
    launch("vocab_parallel_cross_entropy", {local[rank], max, sums, labels},
           {rankLoss, rankLogp}, json::object());
    launch("vocab_parallel_cross_entropy_grad", {rankLogp, labels, dloss},
           {rankGrad}, {{"start", 3 * rank}});
    EXPECT_NEAR(rankLoss.v[0], loss.v[0], 1e-13);
    F64 wholeLogp = columns(logp, 3 * rank, 3),
        wholeGrad = columns(grad, 3 * rank, 3);
    for (int64_t k = 0; k < 9; ++k) {
      EXPECT_NEAR(rankLogp.v[k], wholeLogp.v[k], 1e-13) << rank << " " << k;
      EXPECT_NEAR(rankGrad.v[k], wholeGrad.v[k], 1e-13) << rank << " " << k;
    }
  }
}

TEST(VocabParallelKernels, LookupsOverShardsSumToTheWhole) {
  F64 table({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  I64 ids({3}, {3, 0, 3});
  F64 whole({3, 2});
  launch("gather", {table, ids}, {whole}, {{"axis", 0}});
  F64 dy({3, 2}, {1, 2, 3, 4, 5, 6});
  F64 wholeGrad({4, 2});
  launch("gather_grad", {dy, ids}, {wholeGrad},
         {{"axis", 0}, {"shape", {4, 2}}});
  F64 summed({3, 2});
  for (int64_t rank = 0; rank < 2; ++rank) {
    F64 rows({2, 2},
             {table.v.begin() + 4 * rank, table.v.begin() + 4 * rank + 4});
    F64 part({3, 2}), grad({2, 2});
    launch("vocab_parallel_gather", {rows, ids}, {part}, {{"start", 2 * rank}});
    launch("vocab_parallel_gather_grad", {dy, ids}, {grad},
           {{"start", 2 * rank}, {"rows", 2}});
    for (int64_t k = 0; k < 6; ++k)
      summed.v[k] += part.v[k];
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(grad.v[k], wholeGrad.v[4 * rank + k]) << rank << " " << k;
  }
  EXPECT_EQ(summed.v, whole.v);
}
