//===- TaskOrderTest.cpp - pipeline task orders against their papers ------===//
//
// Uniform stages, free transfers: each schedule's simulated bubble and
// activations against the closed forms of the papers it comes from
// (TaskOrder.h), and every order complete and free of deadlock.

#include "weft/Analysis/TaskOrder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

using namespace weft;

namespace {

constexpr ScheduleKind kAll[] = {
    ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
    ScheduleKind::ZBH1,  ScheduleKind::ZBH2,     ScheduleKind::ZBV};

TaskOrderSimulation simulate(ScheduleKind kind, int64_t p, int64_t m, int64_t v,
                             TaskTimes times) {
  std::string error;
  auto orders = rankTaskOrders(kind, p, m, v, &error);
  EXPECT_EQ(error, "");
  auto sim = simulateTaskOrders(kind, p, orders, times, &error);
  EXPECT_TRUE(sim) << scheduleName(kind).str() << ": " << error;
  if (sim)
    return *sim;
  // A failed simulation fails every comparison below, out of no bounds.
  TaskOrderSimulation failed;
  failed.busy.assign(p, -1);
  failed.innerIdle.assign(p, -1);
  failed.peakActivations.assign(p, -1);
  return failed;
}

} // namespace

TEST(TaskOrder, EveryTaskOnceAndNoDeadlock) {
  for (ScheduleKind kind : kAll)
    for (int64_t p : {1, 2, 4, 8})
      for (int64_t m : {p, 2 * p, 3 * p, 4 * p + (p > 1 ? 0 : 1)}) {
        int64_t v = 2, chunks = chunksPerRank(kind, v);
        std::string error;
        auto orders = rankTaskOrders(kind, p, m, v, &error);
        ASSERT_EQ(error, "");
        // Each stage runs M forwards, M backwards and (split) M W's, each
        // once, on the rank chunkStage places it on.
        std::map<std::tuple<TaskKind, int64_t, int64_t>, int> seen;
        for (int64_t r = 0; r < p; ++r)
          for (const OrderedTask &t : orders[r]) {
            ASSERT_LT(t.chunk, chunks);
            ++seen[{t.kind, chunkStage(kind, p, r, t.chunk), t.microBatch}];
          }
        int kinds = splitsWeightGradient(kind) ? 3 : 2;
        EXPECT_EQ(seen.size(), size_t(kinds * p * chunks * m))
            << scheduleName(kind).str() << " p=" << p << " m=" << m;
        for (auto &[task, count] : seen)
          EXPECT_EQ(count, 1);
        EXPECT_TRUE(simulateTaskOrders(kind, p, orders, {}, &error))
            << scheduleName(kind).str() << " p=" << p << " m=" << m << ": "
            << error;
      }
}

TEST(TaskOrder, ADeadlockIsFound) {
  // Rank 1 (the last stage) runs B0 before its F0 arrives: never.
  std::vector<std::vector<OrderedTask>> orders = {
      {{TaskKind::Forward, 0, 0}, {TaskKind::Backward, 0, 0}},
      {{TaskKind::Backward, 0, 0}, {TaskKind::Forward, 0, 0}}};
  std::string error;
  EXPECT_FALSE(
      simulateTaskOrders(ScheduleKind::OneFOneB, 2, orders, {}, &error));
  EXPECT_EQ(error, "deadlock: rank 0 waits at B0.0; rank 1 waits at B0.0");
  // A W in a schedule that does not split the backward, and a stage no
  // rank runs, are refused, not simulated.
  orders = {{{TaskKind::Forward, 0, 0}, {TaskKind::Weight, 0, 0}}};
  EXPECT_FALSE(
      simulateTaskOrders(ScheduleKind::OneFOneB, 1, orders, {}, &error));
  EXPECT_EQ(error, "task W0.0 in a schedule of F and B tasks");
  orders = {{{TaskKind::Forward, 1, 0}}};
  EXPECT_FALSE(
      simulateTaskOrders(ScheduleKind::Interleaved, 1, orders, {}, &error));
  EXPECT_EQ(error, "no rank runs stage 0");
}

TEST(TaskOrder, InterleavedNeedsMicroBatchesInGroupsOfRanks) {
  std::string error;
  EXPECT_TRUE(
      rankTaskOrders(ScheduleKind::Interleaved, 4, 6, 2, &error).empty());
  EXPECT_EQ(error, "the interleaved schedule runs micro-batches in groups of "
                   "the pipeline's 4 ranks: 6 micro-batches is not a "
                   "multiple of 4");
  EXPECT_TRUE(
      rankTaskOrders(ScheduleKind::Interleaved, 4, 8, 1, &error).empty());
  EXPECT_NE(error.find("at least 2 model chunks"), std::string::npos);
}

// GPipe and 1F1B (Huang et al. 2019; Narayanan et al. 2021): bubble
// (p-1)/(m+p-1); 1F1B holds min(p-r, m) micro-batches on rank r, GPipe m.
TEST(TaskOrder, GPipeAndOneFOneBBubble) {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (int64_t p : {2, 4, 8})
      for (int64_t m : {1, 4, 8, 32}) {
        TaskOrderSimulation sim = simulate(kind, p, m, 1, {1, 2, 0, 0});
        EXPECT_NEAR(sim.bubbleFraction(), double(p - 1) / (m + p - 1), 1e-12)
            << scheduleName(kind).str() << " p=" << p << " m=" << m;
        for (int64_t r = 0; r < p; ++r)
          EXPECT_EQ(sim.peakActivations[r],
                    kind == ScheduleKind::GPipe ? m : std::min(p - r, m));
      }
}

// Interleaved 1F1B (Narayanan et al. 2021, Section 2.2.2): with v chunks
// of 1/v of the stage's time, bubble (p-1)/(vm+p-1); rank 0 holds
// vp + p - 1 chunks, i.e. 1 + (p-1)/(pv) of 1F1B's p stages' worth
// (Korthikanti et al. 2022, Section 4.2.3's factor).
TEST(TaskOrder, InterleavedBubbleAndFirstStageActivations) {
  for (int64_t p : {2, 4, 8})
    for (int64_t v : {2, 3, 4})
      for (int64_t m : {p, 2 * p, 4 * p}) {
        double tv = 1.0 / v;
        TaskOrderSimulation sim =
            simulate(ScheduleKind::Interleaved, p, m, v, {tv, 2 * tv, 0, 0});
        EXPECT_NEAR(sim.bubbleFraction(), double(p - 1) / (v * m + p - 1),
                    1e-12)
            << "p=" << p << " v=" << v << " m=" << m;
        if (m * v >= v * p + p - 1) {
          EXPECT_EQ(sim.peakActivations[0], v * p + p - 1)
              << "p=" << p << " v=" << v << " m=" << m;
        }
      }
}

// ZB-H1 and ZB-H2 (Qi et al. 2024, Section 2): rank 0's idle time inside
// the step is (p-1)(T_F + T_B - T_W) and max(0, (p-1)(T_F + T_B - 2 T_W));
// 1F1B's is (p-1)(T_F + T_B + T_W). In flight: p and 2p-1 micro-batches.
TEST(TaskOrder, ZeroBubbleHandcraftedIdleAndMemory) {
  for (int64_t p : {2, 4, 8})
    for (TaskTimes t : {TaskTimes{1, 1, 1, 0}, TaskTimes{1, 1.2, 0.8, 0},
                        TaskTimes{1, 1.5, 0.5, 0}}) {
      int64_t m = 3 * p;
      TaskOrderSimulation oneF = simulate(ScheduleKind::OneFOneB, p, m, 1, t);
      TaskOrderSimulation h1 = simulate(ScheduleKind::ZBH1, p, m, 1, t);
      TaskOrderSimulation h2 = simulate(ScheduleKind::ZBH2, p, m, 1, t);
      double fb = t.forward + t.backward;
      EXPECT_NEAR(oneF.innerIdle[0], (p - 1) * (fb + t.weight), 1e-9);
      EXPECT_NEAR(h1.innerIdle[0], (p - 1) * (fb - t.weight), 1e-9)
          << "p=" << p;
      EXPECT_NEAR(h2.innerIdle[0], std::max(0.0, (p - 1) * (fb - 2 * t.weight)),
                  1e-9)
          << "p=" << p;
      EXPECT_EQ(h1.peakActivations[0], p);
      EXPECT_EQ(h2.peakActivations[0], 2 * p - 1);
    }
}

// ZB-V (Qi et al. 2024b): two chunks per rank in a V, no idle inside the
// step when T_F = T_B = T_W, at 1F1B's activations (2p chunks of half a
// stage on rank 0).
TEST(TaskOrder, ZeroBubbleV) {
  for (int64_t p : {2, 4, 8})
    for (int64_t m : {2 * p, 4 * p}) {
      TaskOrderSimulation sim =
          simulate(ScheduleKind::ZBV, p, m, 2, {0.5, 0.5, 0.5, 0});
      for (int64_t r = 0; r < p; ++r)
        EXPECT_NEAR(sim.innerIdle[r], 0, 1e-9) << "p=" << p << " r=" << r;
      EXPECT_EQ(sim.peakActivations[0], 2 * p) << "p=" << p << " m=" << m;
    }
}

// Uneven stages (TaskTimes::stageScale: a pipeline's end stages hold the
// embedding and the head). GPipe runs all forwards, then all backwards: two
// permutation flow shops of M identical jobs, each of which takes the sum
// of its stages' times plus M - 1 times the slowest stage's (Johnson 1954;
// the bottleneck stage paces the steady state).
TEST(TaskOrder, TheSlowestStagePacesGPipe) {
  std::vector<double> scale = {1.0, 1.5, 0.5, 2.0};
  double sum = 0, slowest = 0;
  for (double s : scale) {
    sum += s;
    slowest = std::max(slowest, s);
  }
  for (int64_t m : {1, 4, 8}) {
    TaskTimes times{1, 2, 0, 0, scale};
    TaskOrderSimulation sim = simulate(ScheduleKind::GPipe, 4, m, 1, times);
    EXPECT_NEAR(sim.makespan, 3 * (sum + (m - 1) * slowest), 1e-9) << "m=" << m;
    for (int64_t r = 0; r < 4; ++r)
      EXPECT_NEAR(sim.busy[r], 3 * m * scale[r], 1e-9) << "r=" << r;
  }
}

TEST(TaskOrder, StageScalesMustCoverEveryStage) {
  std::string error;
  auto orders = rankTaskOrders(ScheduleKind::OneFOneB, 4, 4, 1, &error);
  TaskTimes times{1, 2, 0, 0, {1.0, 1.0}};
  EXPECT_FALSE(
      simulateTaskOrders(ScheduleKind::OneFOneB, 4, orders, times, &error));
  EXPECT_EQ(error, "2 stage scales for 4 stages");
}

// Stage scales land on the stages' ranks: under ZB-V rank r runs stages r
// and 2P - 1 - r (the V), so its busy time is M (F + B + W) of a chunk
// times the two stages' scales, and its load their mean.
TEST(TaskOrder, ZeroBubbleVRanksRunTheirStagesScales) {
  std::vector<double> scale = {1.4, 0.8, 1.0, 1.2, 0.6, 1.0, 0.9, 1.1};
  int64_t p = 4, m = 8;
  TaskTimes times{0.5, 0.5, 0.5, 0, scale};
  TaskOrderSimulation sim = simulate(ScheduleKind::ZBV, p, m, 2, times);
  std::vector<double> loads = rankLoads(ScheduleKind::ZBV, p, 2, scale);
  for (int64_t r = 0; r < p; ++r) {
    EXPECT_NEAR(sim.busy[r], m * 1.5 * (scale[r] + scale[2 * p - 1 - r]), 1e-9)
        << "r=" << r;
    // rankLoads, which the layout estimate's busiest rank and bound use.
    EXPECT_DOUBLE_EQ(loads[r], (scale[r] + scale[2 * p - 1 - r]) / 2);
  }
}
