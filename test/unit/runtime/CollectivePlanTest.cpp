//===- CollectivePlanTest.cpp - tensor-parallel plans: mesh, collectives,
//                              shards ----------------------------------===//

#include "weft/runtime/Plan.h"
#include "weft/runtime/Shard.h"

#include "PlanJson.h"

#include <gtest/gtest.h>

using namespace weft::rt;
using json = nlohmann::json;
using test::errorOf;
using test::expectRejections;
using test::Rejection;

namespace {
/// Two tensor-parallel ranks: y = all_reduce(x) over "tensor", and a
/// parameter w [2] sharded from a [4] initializer.
json tensorParallelPlan() {
  json rank = json::parse(R"({
    "rank": 0, "coords": {"pipeline": 0, "tensor": 0}, "arena_bytes": 136,
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 0, "kind": "input"},
      {"id": 1, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 64, "kind": "activation"},
      {"id": 2, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 128, "kind": "param"}],
    "params": [{"name": "w", "buffer": 2,
                "shard": {"dim": 0, "blocks": 1, "index": 0, "count": 2}}],
    "state": [], "optimizer_state": [],
    "inputs": [{"name": "x", "buffer": 0}], "outputs": [{"name": "y", "buffer": 1}],
    "constants": [],
    "instructions": [{"op": "all_reduce", "axis": "tensor", "tag": 0,
                      "inputs": [0], "outputs": [1], "phase": "forward",
                      "micro_batch": 0},
                     {"op": "wait_collective", "tag": 0, "inputs": [1, 0],
                      "outputs": [], "phase": "forward", "micro_batch": 0}]})");
  json plan = json::parse(R"({
    "format": "weft-plan", "version": 2,
    "model": {"path": "m.onnx", "sha256": ""},
    "mesh": {"axes": [{"name": "pipeline", "size": 1}, {"name": "tensor", "size": 2}]},
    "micro_batches": 1, "global_batch": 2,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "outputs": [{"name": "y", "dtype": "f32", "shape": [2]}]})");
  json second = rank;
  second["rank"] = 1;
  second["coords"]["tensor"] = 1;
  second["params"][0]["shard"]["index"] = 1;
  test::setRanks(plan, {rank, second});
  return plan;
}

/// A compute instruction y = relu(x) on buffers of one shape.
json relu(int64_t x, int64_t y) {
  return {{"op", "compute"}, {"kernel", "relu"}, {"name", "r"},
          {"attrs", json::object()}, {"phase", "forward"},
          {"micro_batch", 0}, {"inputs", {x}}, {"outputs", {y}}};
}

json transfer(const std::string &op, int64_t peer, int64_t buffer,
              bool post) {
  json inst = {{"op", op}, {"tag", 5}, {"phase", "forward"},
               {"micro_batch", 0}, {"inputs", json::array()},
               {"outputs", json::array()}};
  if (post)
    inst["peer"] = peer;
  inst[op == "irecv" ? "outputs" : "inputs"] = {buffer};
  return inst;
}
} // namespace

TEST(CollectivePlan, AcceptsATensorParallelPlan) {
  Plan plan = parsePlan(tensorParallelPlan().dump(), "p.json",
                        [](const std::string &) { return true; });
  ASSERT_EQ(plan.ranks.size(), 2u);
  const Instruction &sum = plan.ranks[1].instructions[0];
  EXPECT_EQ(sum.op, "all_reduce");
  EXPECT_EQ(sum.axis, "tensor");
  ASSERT_TRUE(plan.ranks[1].params[0].shard);
  EXPECT_EQ(plan.ranks[1].params[0].shard->index, 1);
  EXPECT_EQ(plan.ranks[1].coord("tensor"), 1);
}

TEST(CollectivePlan, RanksShareAProgramThroughCoordinateExpressions) {
  // weftc's form: one program for the stage, the shard index the rank's
  // tensor coordinate.
  auto shared = [] {
    json plan = tensorParallelPlan();
    plan["programs"].erase(1);
    plan["programs"][0]["params"][0]["shard"]["index"] = {{"coord", "tensor"}};
    plan["rank_programs"] = {0, 0};
    return plan;
  };
  Plan plan = parsePlan(shared().dump(), "p.json",
                        [](const std::string &) { return true; });
  ASSERT_EQ(plan.ranks.size(), 2u);
  EXPECT_EQ(plan.ranks[0].params[0].shard->index, 0);
  EXPECT_EQ(plan.ranks[1].params[0].shard->index, 1);
  EXPECT_EQ(plan.ranks[1].path, "rank 1: programs[0]");
  expectRejections(
      shared,
      {{[](json &p) {
          p["programs"][0]["params"][0]["shard"]["index"]["times"] = 0;
        },
        "rank 1: programs[0].params[0].shard: a shard over the tensor axis: "
        "count must be its size (2) and index this rank's tensor coordinate "
        "(1)"},
       {[](json &p) {
          p["programs"][0]["params"][0]["shard"]["index"]["coord"] = "data";
        },
        "programs[0].params[0].shard.index.coord: the mesh has no axis "
        "'data'"},
       // Valid at rank 0, out of range at rank 1, whose copy of the program
       // evaluates only the index again.
       {[](json &p) {
          p["programs"][0]["params"][0]["shard"]["index"]["plus"] = 1;
        },
        "rank 1: programs[0].params[0].shard: needs blocks >= 1, count >= 1 "
        "and index < count"}});
}

TEST(CollectivePlan, ASharedProgramsInstructionsTakeEachRanksCoordinates) {
  // Each tensor rank slices its half of x [4] (an all-slice, as weftc
  // writes it): the second rank of the program re-reads only that
  // instruction, at its coordinate.
  json plan = tensorParallelPlan();
  plan["programs"].erase(1);
  json &program = plan["programs"][0];
  program["params"][0]["shard"]["index"] = {{"coord", "tensor"}};
  program["buffers"][0]["shape"] = {4};
  program["buffers"][0]["bytes"] = 16;
  program["arena_bytes"] = 136;
  program["instructions"].push_back(
      {{"op", "compute"},
       {"kernel", "slice"},
       {"name", "s"},
       {"inputs", {0}},
       {"outputs", {1}},
       {"phase", "forward"},
       {"micro_batch", 0},
       {"attrs",
        {{"starts", {{{"coord", "tensor"}, {"times", 2}}}},
         {"ends", {{{"coord", "tensor"}, {"times", 2}, {"plus", 2}}}},
         {"steps", {1}}}}});
  program["instructions"].erase(0);
  program["instructions"].erase(0);
  plan["inputs"][0]["shape"] = {4};
  plan["rank_programs"] = {0, 0};
  Plan loaded = parsePlan(plan.dump(), "p.json",
                          [](const std::string &) { return true; });
  ASSERT_EQ(loaded.ranks.size(), 2u);
  for (int64_t r : {0, 1}) {
    const KernelAttrs &attrs = loaded.ranks[r].instructions[0].attrs;
    EXPECT_EQ(attrs.ints("starts"), std::vector<int64_t>{2 * r});
    EXPECT_EQ(attrs.ints("ends"), std::vector<int64_t>{2 * r + 2});
    EXPECT_EQ(loaded.ranks[r].params[0].shard->index, r);
    EXPECT_EQ(loaded.ranks[r].coord("tensor"), r);
  }
  // A bound only rank 1 gets wrong is refused naming rank 1.
  plan["programs"][0]["instructions"][0]["attrs"]["ends"][0]["plus"] = 3;
  plan["programs"][0]["instructions"][0]["attrs"]["starts"][0]["plus"] = 1;
  std::string message = errorOf(plan);
  EXPECT_NE(message.find("rank 1: programs[0].instructions[0]: node 's': "
                         "kernel slice"),
            std::string::npos)
      << message;
}

namespace {
/// The tensor-parallel plan with w's momentum buffer, sliced as w is.
json withOptimizerState() {
  json plan = tensorParallelPlan();
  for (json &rank : plan["programs"]) {
    rank["buffers"].push_back({{"id", 3},
                               {"dtype", "f32"},
                               {"shape", {2}},
                               {"bytes", 8},
                               {"offset", 136},
                               {"kind", "optimizer_state"}});
    rank["arena_bytes"] = 144;
    rank["optimizer_state"] = {{{"name", "w.momentum_buffer"},
                                {"buffer", 3},
                                {"shard", rank["params"][0]["shard"]}}};
  }
  return plan;
}
} // namespace

TEST(CollectivePlan, OptimizerStateCarriesItsParametersSlice) {
  Plan plan = parsePlan(withOptimizerState().dump(), "p.json",
                        [](const std::string &) { return true; });
  ASSERT_TRUE(plan.ranks[1].optimizerState[0].shard);
  EXPECT_EQ(plan.ranks[1].optimizerState[0].shard->index, 1);
  EXPECT_EQ(plan.ranks[1].optimizerState[0].shard->count, 2);
  expectRejections(
      withOptimizerState,
      {{[](json &p) {
          p["programs"][1]["optimizer_state"][0]["shard"]["index"] = 0;
        },
        "programs[1].optimizer_state[0].shard: a shard over the tensor axis: "
        "count must be its size (2) and index this rank's tensor coordinate "
        "(1)"},
       {[](json &p) {
          p["programs"][0]["optimizer_state"][0]["shard"]["dim"] = 1;
        },
        "programs[0].optimizer_state[0].shard.dim: dimension 1 of a [2] "
        "buffer"}});
}

TEST(CollectivePlan, NamesTheFieldOfEveryRejection) {
  std::vector<Rejection> cases = {
      {[](json &p) {
         p["programs"][1]["instructions"][0]["axis"] = "sequence";
       },
       "programs[1].instructions[0].axis: 'sequence' is not an axis of the "
       "mesh"},
      // A post whose wait names another tag: the rank's own pairing.
      {[](json &p) { p["programs"][1]["instructions"][0]["tag"] = 1; },
       "programs[1].instructions[1]: wait_collective of tag 0, which is not in "
       "flight on this rank"},
      {[](json &p) {
         p["programs"][1]["instructions"][0]["reduction"] = "max";
       },
       "programs[1]: collective 0 over 'tensor' is all_reduce (max) tag 0"},
      {[](json &p) {
         p["programs"][1]["instructions"][0]["reduction"] = "prod";
       },
       "programs[1].instructions[0].reduction: 'prod': expected sum or max"},
      {[](json &p) { p["programs"][1]["instructions"] = json::array(); },
       "programs[1]: collective 0 over 'tensor' is nothing, on rank 0 of its "
       "group all_reduce (sum) tag 0 of 8 bytes"},
      {[](json &p) { p["mesh"]["axes"][1]["size"] = 3; },
       "rank_programs: 2 ranks for a mesh of 3 devices"},
      {[](json &p) { p["programs"][1]["params"][0]["shard"]["index"] = 0; },
       "programs[1].params[0].shard: a shard over the tensor axis: count must "
       "be its size (2) and index this rank's tensor coordinate (1)"},
      {[](json &p) { p["programs"][0]["params"][0]["shard"]["dim"] = 1; },
       "programs[0].params[0].shard.dim: dimension 1 of a [2] buffer"},
      {[](json &p) { p["programs"][0]["params"][0]["shard"]["blocks"] = 0; },
       "programs[0].params[0].shard: needs blocks >= 1"},
      {[](json &p) {
         p["programs"][0]["instructions"][0]["outputs"] = {2};
         p["programs"][0]["buffers"][2]["shape"] = {1};
         p["programs"][0]["buffers"][2]["bytes"] = 4;
       },
       "programs[0].instructions[0].outputs: all_reduce writes [1] f32, its "
       "input is [2] f32"},
      {[](json &p) {
         for (json &r : p["programs"]) {
           r["buffers"][0]["dtype"] = "i32";
           r["buffers"][1]["dtype"] = "i32";
         }
       },
       "programs[0].instructions[0].inputs: all_reduce sums f32, f64, f16 or "
       "bf16, not i32"},
      // Rank 0 waits for a message rank 1 sends only after the all-reduce
      // that rank 0 has not reached.
      {[](json &p) {
         json &r0 = p["programs"][0]["instructions"];
         r0.insert(r0.begin(), transfer("wait_recv", 1, 1, false));
         r0.insert(r0.begin(), transfer("irecv", 1, 1, true));
         json &r1 = p["programs"][1]["instructions"];
         r1.push_back(transfer("isend", 0, 1, true));
         r1.push_back(transfer("wait_send", 0, 1, false));
       },
       "the ranks would deadlock, each waiting on another: "
       "programs[0].instructions[1] (wait_recv tag 5); "
       "programs[1].instructions[1] "
       "(wait_collective tag 0)"},
      // The post and its wait_collective.
      {[](json &p) { p["programs"][0]["instructions"].erase(1); },
       "programs[0]: the all_reduce of tag 0 is never waited for (no "
       "wait_collective)"},
      {[](json &p) {
         json &r0 = p["programs"][0]["instructions"];
         std::swap(r0[0], r0[1]);
       },
       "programs[0].instructions[0]: wait_collective of tag 0, which is not in "
       "flight on this rank"},
      {[](json &p) { p["programs"][0]["instructions"][1]["tag"] = 3; },
       "wait_collective of tag 3, which is not in flight"},
      {[](json &p) {
         json &r0 = p["programs"][0]["instructions"];
         r0.insert(r0.begin() + 1, relu(1, 2));
       },
       "programs[0].instructions[1] (relu r): reads buffer 1 while the "
       "all_reduce of tag 0 into its bytes is in flight (no wait_collective "
       "before)"},
      {[](json &p) {
         json &r0 = p["programs"][0]["instructions"];
         r0.insert(r0.begin() + 1, relu(2, 0));
       },
       "programs[0].instructions[1] (relu r): writes buffer 0 while the "
       "all_reduce of tag 0 owns its bytes"},
  };
  expectRejections(tensorParallelPlan, cases);
}

/// Sequence parallelism's collectives: x [2] all-gathered into g [4] along
/// dimension 0, and g reduce-scattered back into y [2].
json sequenceParallelPlan() {
  json plan = tensorParallelPlan();
  for (json &rank : plan["programs"]) {
    rank["buffers"].push_back(json::parse(
        R"({"id": 3, "dtype": "f32", "shape": [4], "bytes": 16, "offset": 72, "kind": "activation"})"));
    rank["instructions"] = json::parse(R"([
      {"op": "all_gather", "axis": "tensor", "tag": 0, "dim": 0,
       "inputs": [0], "outputs": [3], "phase": "forward", "micro_batch": 0},
      {"op": "wait_collective", "tag": 0, "inputs": [3, 0], "outputs": [],
       "phase": "forward", "micro_batch": 0},
      {"op": "reduce_scatter", "axis": "tensor", "tag": 1, "dim": 0,
       "inputs": [3], "outputs": [1], "phase": "forward", "micro_batch": 0},
      {"op": "wait_collective", "tag": 1, "inputs": [1, 3], "outputs": [],
       "phase": "forward", "micro_batch": 0}])");
  }
  return plan;
}

TEST(CollectivePlan, AcceptsASequenceParallelPlan) {
  Plan plan = parsePlan(sequenceParallelPlan().dump(), "p.json",
                        [](const std::string &) { return true; });
  const Instruction &gather = plan.ranks[0].instructions[0];
  EXPECT_EQ(gather.op, "all_gather");
  EXPECT_EQ(gather.dim, 0);
  EXPECT_EQ(plan.ranks[1].instructions[2].op, "reduce_scatter");
}

TEST(CollectivePlan, NamesTheFieldOfEverySequenceParallelRejection) {
  std::vector<Rejection> cases = {
      {[](json &p) { p["programs"][0]["instructions"][0].erase("dim"); },
       "programs[0].instructions[0]: missing field 'dim'"},
      {[](json &p) { p["programs"][0]["instructions"][0]["dim"] = 1; },
       "programs[0].instructions[0].dim: dimension 1 of a [2] buffer"},
      {[](json &p) { p["programs"][0]["instructions"][2]["outputs"] = {3}; },
       "programs[0].instructions[2]: reduce_scatter over 'tensor' (2 ranks) "
       "along dimension 0 cannot turn [4] into [4]"},
      {[](json &p) {
         p["programs"][1]["instructions"][2]["reduction"] = "max";
       },
       "programs[1].instructions[2].reduction: 'max': expected sum"},
      {[](json &p) {
         p["programs"][1]["instructions"][0]["op"] = "reduce_scatter";
       },
       "cannot turn [2] into [4]"},
      {[](json &p) {
         std::swap(p["programs"][1]["instructions"][0]["tag"],
                   p["programs"][1]["instructions"][2]["tag"]);
       },
       "wait_collective of tag 0, which is not in flight on this rank"},
      // The second collective sums where the group gathers.
      {[](json &p) {
         std::swap(p["programs"][1]["instructions"][0],
                   p["programs"][1]["instructions"][2]);
       },
       "programs[1]: collective 0 over 'tensor' is reduce_scatter along 0"},
  };
  expectRejections(sequenceParallelPlan, cases);
}

// MPI matches a group's collectives by their order: a rank may number its
// posts differently from its group (a pipeline stage's found_inf maximum
// follows collectives only the last stage has) as long as its waits name
// them.
TEST(CollectivePlan, TagsAreEachRanksOwn) {
  json plan = tensorParallelPlan();
  plan["programs"][1]["instructions"][0]["tag"] = 7;
  plan["programs"][1]["instructions"][1]["tag"] = 7;
  EXPECT_EQ(errorOf(plan), "");
}

TEST(Shard, SlicesEachBlockAndPlacesItBack) {
  // A fused [6, 2] weight of 3 blocks (Q, K, V) over 2 ranks: rank 1 holds
  // the second row of each block.
  std::vector<int64_t> full = {6, 2};
  std::string bytes;
  for (char c = 0; c < 12; ++c)
    bytes.push_back(c);
  ShardDesc s{0, 3, 1, 2};
  std::string shard = sliceShard(bytes, full, 1, s);
  EXPECT_EQ(shard, std::string({2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(fullShape({3, 2}, s), full);
  std::string other(12, '\0');
  placeShard(other, full, 1, s, shard);
  EXPECT_EQ(other, std::string({0, 0, 2, 3, 0, 0, 6, 7, 0, 0, 10, 11}));
  // Along the inner dimension: columns.
  ShardDesc columns{1, 1, 0, 2};
  EXPECT_EQ(sliceShard(bytes, full, 1, columns),
            std::string({0, 2, 4, 6, 8, 10}));
}

namespace {
/// The tensor-parallel plan's two ranks as data-parallel replicas: the
/// global input x [4], each rank's buffer [2] its replica's rows.
json dataParallelPlan() {
  json plan = tensorParallelPlan();
  plan["mesh"]["axes"] = {{{"name", "pipeline"}, {"size", 1}},
                          {{"name", "data"}, {"size", 2}}};
  plan["inputs"][0]["shape"] = {4};
  plan["global_batch"] = 4;
  for (int r : {0, 1}) {
    json &rank = plan["programs"][r];
    rank["params"][0]["shard"] = nullptr;
    rank["buffers"][2]["shape"] = {4};
    rank["buffers"][2]["bytes"] = 16;
    rank["arena_bytes"] = 144;
    rank["instructions"][0]["axis"] = "data";
    rank["inputs"][0]["shard"] = {
        {"dim", 0}, {"blocks", 1}, {"index", r}, {"count", 2}};
  }
  return plan;
}
} // namespace

TEST(CollectivePlan, AcceptsADataParallelPlan) {
  EXPECT_EQ(errorOf(dataParallelPlan()), "");
  Plan plan = parsePlan(dataParallelPlan().dump(), "p.json",
                        [](const std::string &) { return true; });
  ASSERT_TRUE(plan.ranks[1].inputs[0].shard);
  EXPECT_EQ(plan.ranks[1].inputs[0].shard->index, 1);
}

TEST(CollectivePlan, NamesTheFieldOfEveryDataParallelRejection) {
  expectRejections(
      dataParallelPlan,
      {{[](json &p) { p["programs"][1]["inputs"][0]["shard"]["index"] = 0; },
        "programs[1].inputs[0].shard: an input's shard is its data-parallel "
        "replica's rows: dim 0, blocks 1, count the data axis's size (2) and "
        "index this rank's data coordinate (1)"},
       {[](json &p) { p["inputs"][0]["shape"] = {6}; },
        "programs[0].inputs[0]: buffer 0 ([2]) x 2 replicas does not hold "
        "input "
        "'x' ([6])"},
       {[](json &p) { p["programs"][0]["inputs"][0].erase("shard"); },
        "programs[0].inputs[0]: buffer 0 ([2]) does not hold input 'x' ([4])"},
       {[](json &p) { p["programs"][0]["inputs"][0]["name"] = "z"; },
        "programs[0].inputs[0].name: 'z' is not one of the plan's inputs"}});
}

TEST(Shard, FlatPiecesPadTheLastAndPlaceBackWithoutIt) {
  // 9 one-byte elements over 2 ranks: pieces of 5, the second padded.
  std::string bytes;
  for (char c = 1; c <= 9; ++c)
    bytes.push_back(c);
  FlatShardDesc first{{3, 3}, 0, 2}, second{{3, 3}, 1, 2};
  EXPECT_EQ(first.elements(), 9);
  EXPECT_EQ(first.piece(), 5);
  EXPECT_EQ(sliceFlatShard(bytes, 1, first), std::string({1, 2, 3, 4, 5}));
  std::string piece = sliceFlatShard(bytes, 1, second);
  EXPECT_EQ(piece, std::string({6, 7, 8, 9, 0}));
  std::string whole(9, '\0');
  placeFlatShard(whole, 1, second, std::string({16, 17, 18, 19, 20}));
  EXPECT_EQ(whole, std::string({0, 0, 0, 0, 0, 16, 17, 18, 19}));
  // More ranks than elements: the last pieces are all padding.
  FlatShardDesc sparse{{2}, 3, 4};
  EXPECT_EQ(sliceFlatShard(std::string({1, 2}), 1, sparse), std::string(1, 0));
}

namespace {
/// The data-parallel plan with ZeRO-3's parameter: w [3] as pieces of 2.
json zeroPlan() {
  json plan = dataParallelPlan();
  for (int r : {0, 1}) {
    json &rank = plan["programs"][r];
    rank["buffers"][2]["shape"] = {2};
    rank["buffers"][2]["bytes"] = 8;
    rank["params"][0]["flat_shard"] = {
        {"shape", {3}}, {"index", r}, {"count", 2}};
  }
  return plan;
}
} // namespace

TEST(CollectivePlan, AcceptsZeroPieces) {
  EXPECT_EQ(errorOf(zeroPlan()), "");
  Plan plan = parsePlan(zeroPlan().dump(), "p.json",
                        [](const std::string &) { return true; });
  ASSERT_TRUE(plan.ranks[1].params[0].flatShard);
  EXPECT_EQ(plan.ranks[1].params[0].flatShard->index, 1);
  EXPECT_EQ(plan.ranks[1].params[0].flatShard->shape,
            std::vector<int64_t>{3});
}

TEST(CollectivePlan, NamesTheFieldOfEveryZeroPieceRejection) {
  expectRejections(
      zeroPlan,
      {{[](json &p) {
          p["programs"][1]["params"][0]["flat_shard"]["index"] = 0;
        },
        "programs[1].params[0].flat_shard: a piece over the data axis: count "
        "must be its size (2) and index this rank's data coordinate (1)"},
       {[](json &p) {
          p["programs"][0]["params"][0]["flat_shard"]["shape"] = {5};
        },
        "programs[0].params[0].flat_shard: a piece of [5] over 2 ranks is [3], "
        "buffer 2 is [2]"},
       {[](json &p) {
          p["programs"][0]["params"][0]["flat_shard"]["count"] = 0;
        },
        "programs[0].params[0].flat_shard: needs count >= 1 and index < count"},
       {[](json &p) {
          p["programs"][0]["params"][0]["flat_shard"]["shape"] = "x";
        },
        "programs[0].params[0].flat_shard.shape"}});
}

TEST(CollectivePlan, ZeroGroupsAreSubAxesOfTheDataAxis) {
  // D = 4 in groups of S = 2: data coordinate d is data_replica d / 2,
  // data_shard d % 2.
  Plan plan;
  plan.meshAxes = {{"pipeline", 1}, {"data", 4}, {"tensor", 1}};
  plan.subAxes = {{"data_replica", "data", 2, 2}, {"data_shard", "data", 2, 1}};
  std::vector<RankPlan> ranks(4);
  for (int d = 0; d < 4; ++d)
    ranks[d].coords = {{"pipeline", 0}, {"data", d}, {"tensor", 0}};
  EXPECT_EQ(plan.zeroAxis(), "data_shard");
  EXPECT_EQ(plan.axisSize("data_shard"), 2);
  EXPECT_EQ(plan.coord(ranks[3], "data_shard"), 1);
  EXPECT_EQ(plan.coord(ranks[3], "data_replica"), 1);
  EXPECT_EQ(plan.coord(ranks[2], "data_shard"), 0);
  // A group shares a key: {0, 1} and {2, 3} along data_shard, {0, 2} and
  // {1, 3} along data_replica, all four along data.
  auto key = [&](int d, const char *axis) {
    return plan.groupOf(ranks[d], axis);
  };
  EXPECT_EQ(key(0, "data_shard"), key(1, "data_shard"));
  EXPECT_NE(key(1, "data_shard"), key(2, "data_shard"));
  EXPECT_EQ(key(2, "data_shard"), key(3, "data_shard"));
  EXPECT_EQ(key(0, "data_replica"), key(2, "data_replica"));
  EXPECT_NE(key(0, "data_replica"), key(1, "data_replica"));
  EXPECT_EQ(key(1, "data_replica"), key(3, "data_replica"));
  EXPECT_EQ(key(0, "data"), key(3, "data"));
}

namespace {
/// The ZeRO-3 plan over groups: D = 2 split as data_shard (2 ranks, the
/// pieces' axis) x data_replica (1).
json zeroGroupsPlan() {
  json plan = zeroPlan();
  plan["mesh"]["sub_axes"] = {
      {{"name", "data_replica"}, {"of", "data"}, {"size", 1}, {"stride", 2}},
      {{"name", "data_shard"}, {"of", "data"}, {"size", 2}, {"stride", 1}}};
  for (json &rank : plan["programs"])
    rank["instructions"][0]["axis"] = "data_shard";
  return plan;
}
} // namespace

TEST(CollectivePlan, AcceptsZeroGroups) {
  EXPECT_EQ(errorOf(zeroGroupsPlan()), "");
  expectRejections(
      zeroGroupsPlan,
      {{[](json &p) { p["mesh"]["sub_axes"][1]["size"] = 3; },
        "mesh.sub_axes[1]: 'data_shard': 3 ranks at stride 1 do not factor "
        "mesh axis 'data'"},
       {[](json &p) { p["mesh"]["sub_axes"][0]["of"] = "tensor"; },
        "mesh.sub_axes[0]: 'data_replica': 1 ranks at stride 2 do not factor "
        "mesh axis 'tensor'"},
       {[](json &p) { p["mesh"]["sub_axes"][0]["name"] = "data"; },
        "mesh.sub_axes[0]: 'data': the name of another axis"},
       {[](json &p) {
          p["mesh"]["sub_axes"][1]["size"] = 1;
          p["mesh"]["sub_axes"][1]["stride"] = 2;
          p["mesh"]["sub_axes"][0]["stride"] = 1;
          p["mesh"]["sub_axes"][0]["size"] = 2;
        },
        "programs[0].params[0].flat_shard: a piece over the data_shard axis: "
        "count must be its size (1) and index this rank's data_shard "
        "coordinate (0)"},
       {[](json &p) { p["programs"][1]["instructions"][0]["axis"] = "data"; },
        "over 'data"}});
}
