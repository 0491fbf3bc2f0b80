//===- PartitionTest.cpp - bottleneck partition against brute force
//--------===//

#include "weft/Analysis/Partition.h"
#include "weft/Analysis/PartitionCosts.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <random>

using namespace weft;

namespace {
/// The best bottleneck over every way to cut n items into `stages` parts.
double bruteForce(llvm::ArrayRef<double> compute, llvm::ArrayRef<double> cut,
                  int64_t stages) {
  int64_t n = compute.size();
  double best = std::numeric_limits<double>::infinity();
  std::function<void(int64_t, int64_t, double)> search = [&](int64_t start,
                                                             int64_t left,
                                                             double worst) {
    if (left == 1) {
      best = std::min(best, std::max(worst, stageTime(compute, cut, start, n)));
      return;
    }
    for (int64_t end = start + 1; end <= n - (left - 1); ++end)
      search(end, left - 1,
             std::max(worst, stageTime(compute, cut, start, end)));
  };
  search(0, stages, 0.0);
  return best;
}

/// The dynamic program without its search bound: every start tried, left
/// to right, a tie kept by the leftmost start.
llvm::SmallVector<int64_t> fullSearchStarts(llvm::ArrayRef<double> compute,
                                            llvm::ArrayRef<double> cut,
                                            int64_t stages) {
  int64_t n = compute.size();
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> from(stages + 1,
                                         std::vector<int64_t>(n + 1, -1));
  best[0][0] = 0;
  for (int64_t s = 1; s <= stages; ++s)
    for (int64_t j = s; j <= n - (stages - s); ++j)
      for (int64_t i = s - 1; i < j; ++i) {
        if (best[s - 1][i] == inf)
          continue;
        double time = std::max(best[s - 1][i], stageTime(compute, cut, i, j));
        if (time < best[s][j])
          best[s][j] = time, from[s][j] = i;
      }
  llvm::SmallVector<int64_t> starts(stages + 1, n);
  for (int64_t s = stages, j = n; s > 0; --s)
    starts[s - 1] = j = from[s][j];
  return starts;
}
} // namespace

// The search stops where a stage's compute alone exceeds the best
// bottleneck: the same cuts as trying every start, ties (whole-number costs
// make many) included.
TEST(Partition, BoundedSearchCutsWhereTheFullSearchDoes) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    int64_t n = 1 + rng() % 60, stages = 1 + rng() % std::min<int64_t>(n, 9);
    std::vector<double> compute(n), cut(n - 1);
    for (double &c : compute)
      c = trial % 3 ? double(rng() % 5) : (rng() % 1000) / 7.0;
    for (double &c : cut)
      c = trial % 2 ? double(rng() % 3) : 0.0;
    EXPECT_EQ(partitionBottleneck(compute, cut, stages).starts,
              fullSearchStarts(compute, cut, stages))
        << "trial " << trial << ": n=" << n << " stages=" << stages;
  }
}

TEST(Partition, OptimalOnRandomSequencesAgainstBruteForce) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.0, 10.0), transfer(0.0, 3.0);
  for (int trial = 0; trial < 300; ++trial) {
    int64_t n = 1 + rng() % 9, stages = 1 + rng() % n;
    std::vector<double> compute(n), cut(n - 1);
    for (double &c : compute)
      c = cost(rng);
    for (double &c : cut)
      c = trial % 2 ? transfer(rng) : 0.0; // half the trials without transfers
    Partition p = partitionBottleneck(compute, cut, stages);
    ASSERT_EQ(p.starts.size(), static_cast<size_t>(stages + 1));
    EXPECT_EQ(p.starts.front(), 0);
    EXPECT_EQ(p.starts.back(), n);
    double worst = 0;
    for (int64_t s = 0; s < stages; ++s) {
      ASSERT_LT(p.starts[s], p.starts[s + 1]) << "empty stage";
      worst = std::max(worst,
                       stageTime(compute, cut, p.starts[s], p.starts[s + 1]));
    }
    EXPECT_DOUBLE_EQ(worst, p.bottleneck);
    EXPECT_DOUBLE_EQ(p.bottleneck, bruteForce(compute, cut, stages))
        << "n=" << n << " stages=" << stages;
  }
}

TEST(Partition, HandComputedCases) {
  // Uniform layers split evenly.
  Partition even = partitionBottleneck({1, 1, 1, 1, 1, 1, 1, 1}, {}, 4);
  EXPECT_EQ(even.starts, (llvm::SmallVector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_DOUBLE_EQ(even.bottleneck, 2);
  // An expensive cut is avoided: cutting after item 0 costs 10.
  Partition avoid = partitionBottleneck({1, 1, 1, 1}, {10, 0, 0}, 2);
  EXPECT_EQ(avoid.starts[1], 2);
  EXPECT_DOUBLE_EQ(avoid.bottleneck, 2);
  // A manual balance (torchgpipe's `balance`) is taken as given.
  Partition manual = partitionFromBalance({1, 2, 3, 4}, {}, {3, 1});
  EXPECT_EQ(manual.starts, (llvm::SmallVector<int64_t>{0, 3, 4}));
  EXPECT_DOUBLE_EQ(manual.bottleneck, 6);
}

// The stages' shares of the work that the layout estimate gives a
// pipeline's stages: a model of six equal layers between an embedding (1)
// and a heavier head (5) splits into the embedding and four layers, then
// two layers and the head: even halves, the last stage taking fewer
// layers; in four, the head's stage holds no layer. More stages than
// items: no shares.
TEST(Partition, StageSharesOfTheWork) {
  PartitionCosts costs;
  costs.compute = {1, 2, 2, 2, 2, 2, 2, 5};
  EXPECT_EQ(stageShares(costs, 2), (llvm::SmallVector<double>{0.5, 0.5}));
  // Four stages: the embedding and two layers, two layers, two layers,
  // the head alone (bottleneck 5, the only cut that reaches it).
  llvm::SmallVector<double> four = stageShares(costs, 4);
  ASSERT_EQ(four.size(), 4u);
  double expected[] = {5, 4, 4, 5};
  for (int s = 0; s < 4; ++s)
    EXPECT_DOUBLE_EQ(four[s], expected[s] / 18) << "stage " << s;
  EXPECT_TRUE(stageShares(costs, 9).empty());
  EXPECT_TRUE(stageShares(PartitionCosts{}, 1).empty());
}

TEST(Partition, BubbleFractionFormula) {
  // GPipe/1F1B: (p - 1) / (m + p - 1); interleaved: (p - 1) / (v m + p - 1).
  EXPECT_DOUBLE_EQ(bubbleFraction(2, 8), 1.0 / 9.0);
  EXPECT_DOUBLE_EQ(bubbleFraction(4, 8), 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(bubbleFraction(4, 8, 2), 3.0 / 19.0);
  EXPECT_DOUBLE_EQ(bubbleFraction(1, 4), 0.0);
}
