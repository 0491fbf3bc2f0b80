//===- LayoutEstimateTest.cpp - the layout search's estimate -------------===//
//
// The estimate's pieces against hand-computed cases: ZeRO-3's gathers on
// their own stream (exposedGatherSeconds), weft-data-parallel's copies
// (bucketCopyBytes), the branch-and-bound bound, which must never
// exceed the simulated makespan it stands for, uneven stages included, and
// the peak's moments (estimatedPeak).

#include "LayoutEstimate.h"

#include <gtest/gtest.h>

#include <random>

using namespace weft;

namespace {

ProfiledOp op(double seconds, llvm::ArrayRef<int64_t> params = {}) {
  ProfiledOp o;
  o.perSample = seconds;
  o.paramBytes.assign(params.begin(), params.end());
  return o;
}

double exposed(const std::vector<ProfiledOp> &ops, double gather,
               int64_t threshold = 0, double samples = 1) {
  StepProfile profile;
  profile.ops = ops;
  return exposedGatherSeconds(profile, samples, threshold,
                              [&](int64_t) { return gather; });
}

} // namespace

// A gather is posted when the op before its reader starts: hidden while it
// takes no longer than that op, the rest exposed.
TEST(LayoutEstimate, AGatherOverlapsTheOpBeforeItsReader) {
  std::vector<ProfiledOp> ops = {op(1.0), op(0.5, {100})};
  EXPECT_DOUBLE_EQ(exposed(ops, 0.4), 0);
  EXPECT_DOUBLE_EQ(exposed(ops, 1.5), 0.5);
  // Under the shard threshold a parameter stays replicated: no gather.
  EXPECT_DOUBLE_EQ(exposed(ops, 1.5, /*threshold=*/101), 0);
  // The ops' times scale with the micro-batch: at 2 samples the op before
  // takes 2 s and hides the 1.5 s gather.
  EXPECT_DOUBLE_EQ(exposed(ops, 1.5, 0, /*samples=*/2), 0);
}

// Gathers run one at a time on their stream: the second, posted at 1.0,
// waits for nothing but takes 0.6, so its reader starts at 1.6, not 1.1.
TEST(LayoutEstimate, GathersQueueOnTheirStream) {
  std::vector<ProfiledOp> ops = {op(1.0), op(0.1, {100}), op(0.1, {100})};
  EXPECT_NEAR(exposed(ops, 0.6), 0.5, 1e-12);
}

// Extrapolated profiles: f(ops) + repeat (f(opsMore) - f(ops)).
TEST(LayoutEstimate, GathersExtrapolateOverLayers) {
  StepProfile profile;
  // 1.5 s gathers: the first exposes 0.5 (above); the second, posted when
  // its predecessor starts at 1.5, ends at 3.0 where that op ended at 2.0,
  // exposing 1.0 more.
  profile.ops = {op(1.0), op(0.5, {100})};
  profile.opsMore = {op(1.0), op(0.5, {100}), op(0.1, {100})};
  profile.repeat = 3;
  double seconds =
      exposedGatherSeconds(profile, 1, 0, [](int64_t) { return 1.5; });
  EXPECT_NEAR(seconds, 0.5 + 3 * 1.0, 1e-12);
}

// DDP packs and unpacks its gradients (4G); with one micro-batch ZeRO-2's
// plan is ZeRO-1's (docs/architecture.md), so are its copies; ZeRO-3 keeps
// only the packing, summing and split of the shard.
TEST(LayoutEstimate, BucketCopiesByZeroStage) {
  EXPECT_DOUBLE_EQ(bucketCopyBytes(0, 100, 100, 4, 2), 400);
  EXPECT_DOUBLE_EQ(bucketCopyBytes(2, 100, 100, 1, 2),
                   bucketCopyBytes(1, 100, 100, 1, 2));
  // ZeRO-1, G = W = 100, D = 2: pack 200, shard split 100, pieces packed
  // 100, gathered bucket split 200, assigned 300.
  EXPECT_DOUBLE_EQ(bucketCopyBytes(1, 100, 100, 4, 2), 900);
  // ZeRO-3, M = 2: two packs 400, one sum 150, shard split 100.
  EXPECT_DOUBLE_EQ(bucketCopyBytes(3, 100, 100, 2, 2), 650);
}

// The bound orders layouts before they are simulated, so it must not
// exceed the makespan, whatever the stages' shares.
TEST(LayoutEstimate, TheBoundNeverExceedsTheMakespan) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> share(0.5, 2.0);
  ScheduleCache cache;
  struct Case {
    ScheduleKind kind;
    int64_t chunks;
  };
  for (Case c : {Case{ScheduleKind::GPipe, 1}, Case{ScheduleKind::OneFOneB, 1},
                 Case{ScheduleKind::Interleaved, 2},
                 Case{ScheduleKind::ZBH1, 1}, Case{ScheduleKind::ZBV, 2}})
    for (int64_t p : {2, 4})
      for (int64_t m : {4, 8}) {
        int64_t stages = p * chunksPerRank(c.kind, c.chunks);
        std::vector<double> scale(stages);
        for (double &s : scale)
          s = share(random);
        bool split = splitsWeightGradient(c.kind);
        double w = split ? 0.7 : 0;
        double simulated =
            cache.makespan(c.kind, p, m, c.chunks, 1.0, 1.3, w, 0.1, scale);
        double bound = ScheduleCache::makespanBound(c.kind, p, m, c.chunks, 1.0,
                                                    1.3, w, 0.1, scale);
        EXPECT_LE(bound, simulated * (1 + 1e-12))
            << scheduleName(c.kind).str() << " p=" << p << " m=" << m;
        EXPECT_GT(bound, 0.5 * simulated);
      }
}

namespace {

using Moment = StepProfile::Moment;

// A rank of parameters 100, gradients 100, optimizer state 200, kept
// activations 50 a micro-batch (`one`, and `kept` in flight), 2 replicas.
int64_t peakOf(std::vector<Moment> moments, int64_t microBatches,
               int64_t zeroStage, int64_t bucketCap = 1000, int64_t kept = 50,
               int64_t replicas = 2) {
  return estimatedPeak(100, 100, 200, kept, 50, 0, moments, replicas,
                       microBatches, zeroStage, bucketCap)
      .liveBytes;
}

} // namespace

// One micro-batch: the backward's start holds its kept activations and
// only the gradients it has made (10), not the whole gradients (100).
TEST(LayoutEstimate, OneMicroBatchHoldsOnlyTheGradientsItMade) {
  Moment start{1, 10, 50, 5};
  EXPECT_EQ(peakOf({start}, 1, 0, 1000, 500, 1), 100 + 200 + 500 + 5 + 10);
}

// Several: the earlier micro-batches' sums, whole under ZeRO 0 and 1, a
// replica's pieces beside the moment's own under ZeRO-2 and 3.
TEST(LayoutEstimate, EarlierMicroBatchesHoldTheirSums) {
  Moment start{1, 10, 50, 5};
  // kept 500 in flight: 100 + 200 + 500 + 5 + held.
  EXPECT_EQ(peakOf({start}, 4, 1, 1000, 500), 805 + 100);
  EXPECT_EQ(peakOf({start}, 4, 2, 1000, 500), 805 + 50 + 10);
}

// A later moment of the backward (a recompute's peak) has freed part of
// its micro-batch's kept activations: 20 of 50 left, so 30 of the 500 in
// flight are gone.
TEST(LayoutEstimate, ALaterMomentHoldsWhatItsMicroBatchHasNotFreed) {
  Moment recompute{1, 40, 20, 300};
  EXPECT_EQ(peakOf({recompute}, 1, 0, 1000, 500, 1),
            100 + 200 + 470 + 300 + 40);
}

// The last backward's end under data parallelism: the whole gradients,
// the largest bucket packed from them (the cap, or all of them), and
// under ZeRO-2 with micro-batches the pieces' sums.
TEST(LayoutEstimate, TheEndPacksABucketBesideTheGradients) {
  Moment small{1, 0, 0, 0};
  EXPECT_EQ(peakOf({small}, 1, 1, 1000, 0), 100 + 200 + 100 + 100);
  EXPECT_EQ(peakOf({small}, 1, 1, 30, 0), 100 + 200 + 100 + 30);
  EXPECT_EQ(peakOf({small}, 4, 2, 30, 0), 100 + 200 + 100 + 30 + 50);
  EXPECT_EQ(peakOf({small}, 4, 2, 0, 0), 100 + 200 + 100 + 50);
  // One replica packs nothing: its end holds the gradients alone.
  EXPECT_EQ(peakOf({small}, 4, 0, 1000, 0, 1), 100 + 200 + 100);
  // And the category of the larger moment is named.
  MemoryBreakdown end =
      estimatedPeak(100, 100, 200, 0, 0, 0, {small}, 2, 1, 1, 1000);
  EXPECT_EQ(end.at(MemoryCategory::Gradients), 200);
  EXPECT_EQ(end.at(MemoryCategory::KeptActivations), 0);
}

// GPipe's last micro-batch is not recomputed: its backward, the first,
// starts with 400 more kept bytes; a later moment (another micro-batch's
// recompute) does not hold them.
TEST(LayoutEstimate, GPipesLastMicroBatchAddsToTheStartOnly) {
  Moment start{1, 0, 50, 0, /*start=*/true};
  Moment recompute{1, 0, 50, 300};
  auto peak = [&](std::vector<Moment> moments) {
    return estimatedPeak(100, 100, 200, 150, 50, 400, moments, 1, 4, 0, 0)
        .liveBytes;
  };
  EXPECT_EQ(peak({start}), 100 + 200 + 100 + 150 + 400);
  EXPECT_EQ(peak({recompute}), 100 + 200 + 100 + 150 + 300);
  EXPECT_EQ(peak({start, recompute}), 950);
}
