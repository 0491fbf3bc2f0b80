//===- PipelineSimulationTest.cpp - schedules and their simulation --------===//
//
// The schedule simulator against the pipeline-bubble formula of Huang et al.
// (GPipe, 2019) and Narayanan et al. (2021): P uniform stages, M
// micro-batches, free transfers: bubble = (P - 1) / (M + P - 1), step time
// (M + P - 1) (t_F + t_B). And the task orders' invariants.
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/Partition.h"
#include "weft/Analysis/PipelineSimulation.h"
#include "weft/Analysis/Schedule.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <set>

using namespace weft;

namespace {

/// Each stage: its tasks in schedule order; F(i) receives its activation
/// from stage s-1 and sends to s+1, B(i) the reverse. Tags are unique per
/// (direction, micro-batch, boundary).
std::vector<std::vector<SimOp>> uniformPipeline(ScheduleKind kind,
                                                int64_t stages, int64_t m,
                                                double forward,
                                                double backward) {
  auto tag = [&](bool back, int64_t mb, int64_t boundary) {
    return (back ? 1 : 0) + 2 * (mb + m * boundary);
  };
  std::vector<std::vector<SimOp>> programs(stages);
  for (int64_t s = 0; s < stages; ++s) {
    auto &p = programs[s];
    for (const StageTask &t : stageTasks(kind, s, stages, m)) {
      std::string label = t.label();
      int64_t from = t.backward ? s + 1 : s - 1;
      int64_t to = t.backward ? s - 1 : s + 1;
      int64_t inTag = tag(t.backward, t.microBatch, std::min(s, from));
      int64_t outTag = tag(t.backward, t.microBatch, std::min(s, to));
      bool receives = from >= 0 && from < stages;
      bool sends = to >= 0 && to < stages;
      if (receives) {
        p.push_back({SimOp::Kind::IRecv, 0, from, inTag, 0, label});
        p.push_back({SimOp::Kind::WaitRecv, 0, from, inTag, 0, label});
      }
      p.push_back({SimOp::Kind::Compute, t.backward ? backward : forward, 0,
                   0, 0, label});
      if (sends)
        p.push_back({SimOp::Kind::ISend, 0, to, outTag, 0, label});
    }
    // Sends complete at the end (rendezvous: the receivers posted by then).
    for (const StageTask &t : stageTasks(kind, s, stages, m)) {
      int64_t to = t.backward ? s - 1 : s + 1;
      if (to >= 0 && to < stages)
        p.push_back({SimOp::Kind::WaitSend, 0, to,
                     tag(t.backward, t.microBatch, std::min(s, to)), 0,
                     t.label()});
    }
  }
  return programs;
}

DeviceModel freeTransfers() {
  DeviceModel device;
  device.linkLatencySeconds = 0;
  device.linkBytesPerSecond = 1e30;
  return device;
}

struct Shape {
  int64_t stages, microbatches;
};

class BubbleTest : public ::testing::TestWithParam<Shape> {};

TEST_P(BubbleTest, UniformStagesMatchTheFormula) {
  auto [p, m] = GetParam();
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    SimResult r = simulatePipeline(uniformPipeline(kind, p, m, 1.0, 2.0),
                                   freeTransfers());
    ASSERT_TRUE(r.completed) << r.deadlock;
    EXPECT_NEAR(r.stepSeconds, (m + p - 1) * 3.0, 1e-9)
        << scheduleName(kind).str() << " P=" << p << " M=" << m;
    EXPECT_NEAR(r.bubbleFraction, bubbleFraction(p, m), 1e-12)
        << scheduleName(kind).str() << " P=" << p << " M=" << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BubbleTest,
                         ::testing::Values(Shape{1, 1}, Shape{2, 1},
                                           Shape{2, 8}, Shape{4, 4},
                                           Shape{4, 8}, Shape{8, 3}),
                         [](const ::testing::TestParamInfo<Shape> &info) {
                           return "P" + std::to_string(info.param.stages) +
                                  "M" +
                                  std::to_string(info.param.microbatches);
                         });

TEST(ScheduleTest, EveryTaskOnceAndForwardBeforeBackward) {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (int64_t p : {1, 2, 4, 8})
      for (int64_t m : {1, 3, 8})
        for (int64_t s = 0; s < p; ++s) {
          auto tasks = stageTasks(kind, s, p, m);
          ASSERT_EQ(tasks.size(), size_t(2 * m));
          std::set<std::pair<bool, int64_t>> seen;
          for (const StageTask &t : tasks) {
            if (t.backward) {
              EXPECT_TRUE(seen.count({false, t.microBatch}))
                  << "B" << t.microBatch << " before its F";
            }
            EXPECT_TRUE(seen.insert({t.backward, t.microBatch}).second);
          }
        }
}

TEST(ScheduleTest, InFlightMicroBatches) {
  // The activation memory each schedule implies (Narayanan et al. 2021):
  // GPipe holds all M micro-batches at once; 1F1B at most P - s on stage s.
  int64_t p = 4, m = 8;
  for (int64_t s = 0; s < p; ++s)
    for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
      int64_t live = 0, peak = 0;
      for (const StageTask &t : stageTasks(kind, s, p, m)) {
        live += t.backward ? -1 : 1;
        peak = std::max(peak, live);
      }
      EXPECT_EQ(peak, kind == ScheduleKind::GPipe ? m : p - s);
    }
}

TEST(SimulationTest, ReportsADeadlock) {
  // Both ranks wait to receive before sending.
  std::vector<std::vector<SimOp>> programs(2);
  for (int64_t r = 0; r < 2; ++r) {
    int64_t peer = 1 - r;
    programs[r] = {{SimOp::Kind::IRecv, 0, peer, peer, 4, "F0"},
                   {SimOp::Kind::WaitRecv, 0, peer, peer, 4, "F0"},
                   {SimOp::Kind::ISend, 0, peer, r, 4, "F0"},
                   {SimOp::Kind::WaitSend, 0, peer, r, 4, "F0"}};
  }
  SimResult r = simulatePipeline(programs, freeTransfers());
  EXPECT_FALSE(r.completed);
  EXPECT_EQ(r.blockedRank, 0);
  EXPECT_EQ(r.blockedOp, 1);
  EXPECT_NE(r.deadlock.find("wait_recv of tag 1 from stage 1"),
            std::string::npos)
      << r.deadlock;
}

TEST(SimulationTest, TransferTimeDelaysTheReceiver) {
  // alpha-beta: 1 ms latency + 1000 bytes at 1 MB/s = 2 ms after posting.
  DeviceModel device;
  device.linkLatencySeconds = 1e-3;
  device.linkBytesPerSecond = 1e6;
  std::vector<std::vector<SimOp>> programs = {
      {{SimOp::Kind::Compute, 0.5e-3, 0, 0, 0, "F0"},
       {SimOp::Kind::ISend, 0, 1, 7, 1000, "F0"},
       {SimOp::Kind::WaitSend, 0, 1, 7, 0, "F0"}},
      {{SimOp::Kind::IRecv, 0, 0, 7, 0, "F0"},
       {SimOp::Kind::WaitRecv, 0, 0, 7, 0, "F0"},
       {SimOp::Kind::Compute, 1e-3, 0, 0, 0, "F0"}}};
  SimResult r = simulatePipeline(programs, device);
  ASSERT_TRUE(r.completed);
  EXPECT_NEAR(r.stepSeconds, 0.5e-3 + 2e-3 + 1e-3, 1e-12);
}

} // namespace

TEST(PipelineSimulation, ComputeBetweenPostAndWaitHidesACollective) {
  // B(0): a 3 s GEMM, a 2 s all-reduce posted before a 1 s GEMM and waited
  // for after it, then a 1 s op: the wait blocks 1 s (2 - 1), the step
  // takes 3 + 2 + 1 = 6 s; with 4 s of compute between, nothing blocks.
  auto program = [](double between) {
    return std::vector<SimOp>{
        {SimOp::Kind::Compute, 3, 0, 0, 0, "B0"},
        {SimOp::Kind::PostCollective, 2, 0, 0, 0, "B0"},
        {SimOp::Kind::Compute, between, 0, 0, 0, "B0"},
        {SimOp::Kind::WaitCollective, 0, 0, 0, 0, "B0"},
        {SimOp::Kind::Compute, 1, 0, 0, 0, "B0"}};
  };
  DeviceModel device;
  SimResult partly = simulatePipeline({program(1)}, device);
  ASSERT_TRUE(partly.completed);
  EXPECT_DOUBLE_EQ(partly.stepSeconds, 6);
  EXPECT_DOUBLE_EQ(partly.busySeconds[0], 5);
  SimResult hidden = simulatePipeline({program(4)}, device);
  EXPECT_DOUBLE_EQ(hidden.stepSeconds, 8);
  EXPECT_DOUBLE_EQ(hidden.busySeconds[0], 8);
  // The collective is its own slice, from its post for its cost.
  std::vector<SimEvent> collectives;
  for (const SimEvent &e : partly.events)
    if (e.category == "collective")
      collectives.push_back(e);
  ASSERT_EQ(collectives.size(), 1u);
  EXPECT_DOUBLE_EQ(collectives[0].start, 3);
  EXPECT_DOUBLE_EQ(collectives[0].end, 5);
}

namespace {
/// The simulator's programs of the module `ir` (kept alive: SimOps point
/// at its ops).
std::vector<std::vector<SimOp>> programsOf(const char *ir) {
  static mlir::MLIRContext ctx;
  static std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  ctx.loadDialect<WeftDialect, mlir::func::FuncDialect,
                  mlir::shard::ShardDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(ir, &ctx);
  EXPECT_TRUE(module);
  if (!module)
    return {};
  modules.push_back(std::move(module));
  DeviceModel device;
  return stagePrograms(*modules.back(), device);
}
} // namespace

TEST(PipelineSimulation, OnlyTheCollectiveAWaitCompletesIsAPost) {
  // The wait also reads the collective's input (to keep it live): the
  // matmul producing it is compute, not a post.
  auto programs = programsOf(R"(
    shard.grid @mesh(shape = 2x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
    func.func @stage0(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {weft.stage = 0 : i64} {
      %y = weft.matmul %x, %w {weft.task = #weft.task<B>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %p = shard.all_reduce %y on @mesh grid_axes = [1] {weft.task = #weft.task<B>} : tensor<4x4xf32> -> tensor<4x4xf32>
      %s = weft.wait_collective %p, %y {weft.task = #weft.task<B>} : tensor<4x4xf32> -> tensor<4x4xf32>
      return %s : tensor<4x4xf32>
    })");
  ASSERT_EQ(programs.size(), 1u);
  ASSERT_EQ(programs[0].size(), 3u);
  EXPECT_EQ(programs[0][0].kind, SimOp::Kind::Compute);
  EXPECT_EQ(programs[0][1].kind, SimOp::Kind::PostCollective);
  EXPECT_EQ(programs[0][2].kind, SimOp::Kind::WaitCollective);
}

TEST(PipelineSimulation, AnUnstagedMainIsOneRanksProgram) {
  // Without stages @main is simulated; a collective nothing waits for is
  // waited for at once (as plan emission emits it).
  auto programs = programsOf(R"(
    shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
    func.func @main(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> {
      %y = weft.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %s = shard.all_reduce %y on @mesh grid_axes = [1] : tensor<4x4xf32> -> tensor<4x4xf32>
      return %s : tensor<4x4xf32>
    })");
  ASSERT_EQ(programs.size(), 1u);
  ASSERT_EQ(programs[0].size(), 3u);
  EXPECT_EQ(programs[0][0].kind, SimOp::Kind::Compute);
  EXPECT_EQ(programs[0][1].kind, SimOp::Kind::PostCollective);
  EXPECT_GT(programs[0][1].seconds, 0);
  EXPECT_EQ(programs[0][2].kind, SimOp::Kind::WaitCollective);
  SimResult result = simulatePipeline(programs, DeviceModel());
  ASSERT_TRUE(result.completed);
  EXPECT_DOUBLE_EQ(result.stepSeconds,
                   programs[0][0].seconds + programs[0][1].seconds);
  EXPECT_DOUBLE_EQ(result.busySeconds[0], programs[0][0].seconds);
}
