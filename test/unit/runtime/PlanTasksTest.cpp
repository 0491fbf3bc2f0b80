//===- PlanTasksTest.cpp - a program's task form, expanded and loaded -----===//

#include "weft/runtime/PlanTasks.h"
#include "weft/runtime/Plan.h"
#include "weft/runtime/PlanView.h"

#include "PlanJson.h"

#include <gtest/gtest.h>

#include <climits>

using namespace weft::rt;
using json = nlohmann::json;
using test::errorOf;
using test::expectRejections;
using test::Rejection;

namespace {

/// A one-rank plan whose program is `program`.
json planOf(const json &program, const json &mesh = json::parse(
                                     R"({"axes": [{"name": "pipeline",
                                                   "size": 1}]})")) {
  json plan = json::parse(R"({
    "format": "weft-plan", "version": 2,
    "model": {"path": "m.onnx", "sha256": ""},
    "micro_batches": 2, "global_batch": 2,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "outputs": [{"name": "y", "dtype": "f32", "shape": [2]}]})");
  plan["mesh"] = mesh;
  plan["programs"] = {program};
  plan["rank_programs"] = json::array();
  int64_t ranks = 1;
  for (const json &axis : mesh["axes"])
    ranks *= axis["size"].get<int64_t>();
  for (int64_t r = 0; r < ranks; ++r)
    plan["rank_programs"].push_back(0);
  return plan;
}

/// A program over x (buffer 0, the input) and y (buffer 1, the output)
/// of `arenaBytes`, with the task-form fields `fields` (JSON).
json taskForm(int64_t arenaBytes, const char *fields) {
  json program = json::parse(R"({
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 0, "kind": "input"},
      {"id": 1, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 64, "kind": "activation"}],
    "params": [], "state": [], "optimizer_state": [],
    "inputs": [{"name": "x", "buffer": 0}], "outputs": [{"name": "y", "buffer": 1}],
    "constants": []})");
  program["arena_bytes"] = arenaBytes;
  program.update(json::parse(fields));
  return program;
}

/// Two micro-batches, a forward body (a = relu(x); s = softmax(a viewed
/// [1, 2]) along an axis that moves with the micro-batch) and a backward
/// one (y = relu(a)); a and its view in slots of 64 bytes, s unslotted.
json taskProgram() {
  return taskForm(320, R"({
    "micro_batch_slots": [{"count": 2, "bytes": 64}],
    "frames": [[
      {"dtype": "f32", "shape": [2], "bytes": 8, "offset": 128, "kind": "activation", "slots": 0},
      {"dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 128, "kind": "activation", "slots": 0, "view_of": 2},
      {"dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 256, "kind": "activation"}]],
    "micro_batch_frames": [0, 0],
    "bodies": [
      {"phase": "forward", "instructions": [
        {"op": "compute", "kernel": "relu", "name": "r0", "inputs": [0], "outputs": [2], "attrs": {}},
        {"op": "compute", "kernel": "softmax", "name": "s", "inputs": [3], "outputs": [4],
         "attrs": {"axis": {"coord": "pipeline", "times": 3, "per_micro_batch": 1}}}]},
      {"phase": "backward", "instructions": [
        {"op": "compute", "kernel": "relu", "name": "r1", "inputs": [2], "outputs": [1], "attrs": {}}]}],
    "tasks": [{"body": 0, "micro_batch": 0}, {"body": 0, "micro_batch": 1},
              {"body": 1, "micro_batch": 0}, {"body": 1, "micro_batch": 1}]})");
}

/// taskProgram written out.
json explicitProgram() {
  json program = taskProgram();
  for (const char *key :
       {"micro_batch_slots", "frames", "micro_batch_frames", "bodies", "tasks"})
    program.erase(key);
  program["buffers"] = json::parse(R"([
    {"id": 0, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 0, "kind": "input"},
    {"id": 1, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 64, "kind": "activation"},
    {"id": 2, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 128, "kind": "activation"},
    {"id": 3, "dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 128, "kind": "activation", "view_of": 2},
    {"id": 4, "dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 256, "kind": "activation"},
    {"id": 5, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 192, "kind": "activation"},
    {"id": 6, "dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 192, "kind": "activation", "view_of": 5},
    {"id": 7, "dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 256, "kind": "activation"}])");
  program["instructions"] = json::parse(R"([
    {"op": "compute", "kernel": "relu", "name": "r0", "inputs": [0], "outputs": [2], "attrs": {},
     "phase": "forward", "micro_batch": 0},
    {"op": "compute", "kernel": "softmax", "name": "s", "inputs": [3], "outputs": [4],
     "attrs": {"axis": {"coord": "pipeline", "times": 3}}, "phase": "forward", "micro_batch": 0},
    {"op": "compute", "kernel": "relu", "name": "r0", "inputs": [0], "outputs": [5], "attrs": {},
     "phase": "forward", "micro_batch": 1},
    {"op": "compute", "kernel": "softmax", "name": "s", "inputs": [6], "outputs": [7],
     "attrs": {"axis": {"coord": "pipeline", "times": 3, "plus": 1}}, "phase": "forward",
     "micro_batch": 1},
    {"op": "compute", "kernel": "relu", "name": "r1", "inputs": [2], "outputs": [1], "attrs": {},
     "phase": "backward", "micro_batch": 0},
    {"op": "compute", "kernel": "relu", "name": "r1", "inputs": [5], "outputs": [1], "attrs": {},
     "phase": "backward", "micro_batch": 1}])");
  return program;
}

/// Two tensor-parallel ranks sharing one program: per micro-batch a =
/// relu(x), b = all_reduce(a) in one task; its wait (relative tag -1: the
/// previous task's post), y = relu(b) and a softmax along the rank's
/// tensor coordinate in the next.
json collectiveProgram() {
  return taskForm(384, R"({
    "micro_batch_slots": [{"count": 1, "bytes": 0}],
    "frames": [[
      {"dtype": "f32", "shape": [2], "bytes": 8, "offset": 128, "kind": "activation"},
      {"dtype": "f32", "shape": [2], "bytes": 8, "offset": 192, "kind": "activation"},
      {"dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 192, "kind": "activation", "view_of": 3},
      {"dtype": "f32", "shape": [1, 2], "bytes": 8, "offset": 256, "kind": "activation"}]],
    "micro_batch_frames": [0, 0],
    "bodies": [
      {"phase": "forward", "instructions": [
        {"op": "compute", "kernel": "relu", "name": "r", "inputs": [0], "outputs": [2], "attrs": {}},
        {"op": "all_reduce", "axis": "tensor", "tag": 0, "inputs": [2], "outputs": [3]}]},
      {"phase": "forward", "instructions": [
        {"op": "wait_collective", "tag": -1, "inputs": [3, 2], "outputs": []},
        {"op": "compute", "kernel": "relu", "name": "y", "inputs": [3], "outputs": [1], "attrs": {}},
        {"op": "compute", "kernel": "softmax", "name": "s", "inputs": [4], "outputs": [5],
         "attrs": {"axis": {"coord": "tensor"}}}]}],
    "tasks": [{"body": 0, "micro_batch": 0}, {"body": 1, "micro_batch": 0},
              {"body": 0, "micro_batch": 1}, {"body": 1, "micro_batch": 1}]})");
}

json collectivePlan() {
  return planOf(collectiveProgram(), json::parse(R"({"axes": [
      {"name": "pipeline", "size": 1}, {"name": "tensor", "size": 2}]})"));
}

bool anyKernel(const std::string &) { return true; }

Plan load(const json &plan) {
  return parsePlan(plan.dump(), "p.json", anyKernel);
}

json taskPlan() { return planOf(taskProgram()); }

/// `a` and `b` hold the same instructions (fields the tests' plans set).
void expectSameInstructions(const RankPlan &a, const RankPlan &b) {
  ASSERT_EQ(a.instructions.size(), b.instructions.size());
  for (size_t i = 0; i < a.instructions.size(); ++i) {
    SCOPED_TRACE("instruction " + std::to_string(i));
    const Instruction &x = a.instructions[i], &y = b.instructions[i];
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.kernel, y.kernel);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.phase, y.phase);
    EXPECT_EQ(x.microBatch, y.microBatch);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    EXPECT_EQ(x.tag, y.tag);
    EXPECT_EQ(x.peer, y.peer);
    EXPECT_EQ(x.cost.flops, y.cost.flops);
    EXPECT_EQ(x.attrs.has("axis"), y.attrs.has("axis"));
    if (x.attrs.has("axis")) {
      EXPECT_EQ(x.attrs.i("axis"), y.attrs.i("axis"));
    }
  }
}

} // namespace

TEST(PlanTasks, ExpandsToTheExplicitProgram) {
  EXPECT_EQ(expandTasks(taskProgram(), "p.json", "programs[0]"),
            explicitProgram());
  // An explicit program is its own expansion.
  EXPECT_EQ(expandTasks(explicitProgram(), "p.json", "programs[0]"),
            explicitProgram());
  // Where each instruction and buffer was written.
  TaskOrigins origins;
  expandTasks(taskProgram(), "p.json", "programs[0]", &origins);
  ASSERT_EQ(origins.instructions.size(), 6u);
  EXPECT_EQ(origins.instructionField(3) + origins.instructionNote(3),
            "bodies[0].instructions[1] (tasks[1], micro-batch 1)");
  EXPECT_EQ(origins.instructionField(4) + origins.instructionNote(4),
            "bodies[1].instructions[0] (tasks[2], micro-batch 0)");
  EXPECT_EQ(origins.bufferField(1) + origins.bufferNote(1), "buffers[1]");
  EXPECT_EQ(origins.bufferField(5) + origins.bufferNote(5),
            "frames[0][0] (micro-batch 1)");
  // An explicit program has no origins: its fields are its own.
  expandTasks(explicitProgram(), "p.json", "programs[0]", &origins);
  EXPECT_TRUE(origins.instructions.empty());
  EXPECT_TRUE(origins.buffers.empty());
}

TEST(PlanTasks, LoadsAsTheExplicitPlan) {
  Plan tasks = load(taskPlan()), explicit_ = load(planOf(explicitProgram()));
  const RankPlan &a = tasks.ranks[0], &b = explicit_.ranks[0];
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    SCOPED_TRACE("buffer " + std::to_string(i));
    EXPECT_EQ(a.buffers[i].id, b.buffers[i].id);
    EXPECT_EQ(a.buffers[i].dtype, b.buffers[i].dtype);
    EXPECT_EQ(a.buffers[i].shape, b.buffers[i].shape);
    EXPECT_EQ(a.buffers[i].bytes, b.buffers[i].bytes);
    EXPECT_EQ(a.buffers[i].offset, b.buffers[i].offset);
    EXPECT_EQ(a.buffers[i].kind, b.buffers[i].kind);
    EXPECT_EQ(a.buffers[i].viewOf, b.buffers[i].viewOf);
  }
  expectSameInstructions(a, b);
  EXPECT_EQ(a.instructions[1].attrs.i("axis"), 0);
  EXPECT_EQ(a.instructions[3].attrs.i("axis"), 1);
  EXPECT_EQ(a.instructionWhere(3),
            "programs[0].bodies[0].instructions[1] (tasks[1], micro-batch 1)");
  EXPECT_EQ(b.instructionWhere(3), "programs[0].instructions[3]");
}

TEST(PlanTasks, PlacesSlottedBuffersInTheirMicroBatchesSlot) {
  // K = 2 slots, M = 3: micro-batch 2 reuses slot 0; every micro-batch
  // gets its frame, even one no task runs. A template may view a program
  // buffer (the id stays) or an earlier template (its micro-batch's copy).
  json program = taskProgram();
  program["micro_batch_frames"] = {0, 0, 0};
  program["frames"][0].push_back({{"dtype", "f32"},
                                  {"shape", {1, 2}},
                                  {"bytes", 8},
                                  {"offset", 64},
                                  {"kind", "activation"},
                                  {"view_of", 1}});
  json out = expandTasks(program, "p.json", "programs[0]");
  json buffers = out["buffers"];
  ASSERT_EQ(buffers.size(), 2u + 3 * 4);
  for (int64_t m = 0; m < 3; ++m) {
    const json &a = buffers[2 + 4 * m], &view = buffers[3 + 4 * m],
               &s = buffers[4 + 4 * m], &program = buffers[5 + 4 * m];
    EXPECT_EQ(a["id"], 2 + 4 * m);
    EXPECT_EQ(a["offset"], 128 + 64 * (m % 2)) << "micro-batch " << m;
    EXPECT_FALSE(a.contains("slots"));
    EXPECT_EQ(view["offset"], a["offset"]);
    EXPECT_EQ(view["view_of"], a["id"]);
    EXPECT_EQ(s["offset"], 256);
    EXPECT_EQ(program["view_of"], 1);
  }
  json plan = planOf(program);
  plan["micro_batches"] = 3;
  Plan loaded = load(plan);
  EXPECT_EQ(loaded.ranks[0].buffers[10].offset, 128);
  EXPECT_EQ(loaded.ranks[0].buffers[13].viewOf, 1);

  // Slot groups (the memory plan's): a template names its group; each
  // rotates over its own slots.
  program["micro_batch_slots"] = {{{"count", 2}, {"bytes", 64}},
                                  {{"count", 3}, {"bytes", 16}}};
  program["frames"][0][2]["slots"] = 1;
  out = expandTasks(program, "p.json", "programs[0]");
  for (int64_t m = 0; m < 3; ++m) {
    EXPECT_EQ(out["buffers"][2 + 4 * m]["offset"], 128 + 64 * (m % 2));
    EXPECT_EQ(out["buffers"][4 + 4 * m]["offset"], 256 + 16 * m);
    EXPECT_FALSE(out["buffers"][4 + 4 * m].contains("slots"));
  }
}

TEST(PlanTasks, RebasesCollectiveTagsPerTask) {
  Plan plan = load(collectivePlan());
  for (const RankPlan &rank : plan.ranks) {
    // Task order: post 0, wait, post 1, wait.
    std::vector<std::pair<std::string, int64_t>> collectives;
    for (const Instruction &inst : rank.instructions)
      if (isCollective(inst.op) || isCollectiveWait(inst.op))
        collectives.push_back({inst.op, inst.tag});
    EXPECT_EQ(collectives, (std::vector<std::pair<std::string, int64_t>>{
                               {"all_reduce", 0},
                               {"wait_collective", 0},
                               {"all_reduce", 1},
                               {"wait_collective", 1}}));
    // The second rank re-reads the instructions its coordinates change.
    EXPECT_EQ(rank.instructions[4].attrs.i("axis"), rank.rank);
  }
  EXPECT_EQ(plan.ranks[1].instructionWhere(9),
            "rank 1: programs[0].bodies[1].instructions[2] (tasks[3], "
            "micro-batch 1)");
}

TEST(PlanTasks, EvaluatesPerMicroBatchExpressions) {
  json program = taskProgram();
  program["bodies"][0]["instructions"][1]["attrs"] = {
      {"perm", {{{"plus", 1}, {"per_micro_batch", 2}}, 0}},
      {"start", {{"coord", "tensor"}, {"times", 4}, {"per_micro_batch", -1}}},
      {"rows", {{"coord", "tensor"}, {"plus", 3}}}};
  json out = expandTasks(program, "p.json", "programs[0]");
  for (int64_t m = 0; m < 2; ++m) {
    const json &attrs = out["instructions"][1 + 2 * m]["attrs"];
    EXPECT_EQ(attrs["perm"], json({1 + 2 * m, 0}));
    json start = {{"coord", "tensor"}, {"times", 4}};
    if (m)
      start["plus"] = -m;
    EXPECT_EQ(attrs["start"], start);
    // A coordinate expression without per_micro_batch stays as written.
    EXPECT_EQ(attrs["rows"], json({{"coord", "tensor"}, {"plus", 3}}));
  }
}

TEST(PlanTasks, ViewsShowTheExplicitForm) {
  json view = rankView(taskPlan(), 0, "p.json");
  EXPECT_FALSE(view.contains("tasks"));
  ASSERT_EQ(view["instructions"].size(), 6u);
  EXPECT_EQ(view["instructions"][3]["attrs"]["axis"], 1);
  EXPECT_EQ(view["buffers"][5]["offset"], 192);
  json views = planView(collectivePlan(), -1, "p.json");
  ASSERT_EQ(views["ranks"].size(), 2u);
  EXPECT_EQ(views["ranks"][1]["instructions"][7]["tag"], 1);
  json plan = explicitPlan(taskPlan(), "p.json");
  EXPECT_EQ(plan["programs"][0], explicitProgram());
}

TEST(PlanTasks, NamesTheFieldOfEveryRejection) {
  expectRejections(
      taskPlan,
      {{[](json &p) {
          p["programs"][0]["instructions"] = explicitProgram()["instructions"];
        },
        "p.json: programs[0]: holds both instructions and tasks"},
       {[](json &p) { p["programs"][0].erase("frames"); },
        "programs[0]: missing field 'frames'"},
       {[](json &p) { p["programs"][0]["tasks"][1]["body"] = 9; },
        "p.json: programs[0].tasks[1].body: body 9 does not exist (2 "
        "bodies)"},
       {[](json &p) { p["programs"][0]["tasks"][2]["micro_batch"] = 2; },
        "programs[0].tasks[2].micro_batch: micro-batch 2 does not exist (2 "
        "micro-batches in micro_batch_frames)"},
       {[](json &p) { p["programs"][0]["micro_batch_frames"][1] = 1; },
        "programs[0].micro_batch_frames[1]: frame 1 does not exist (1 "
        "frames)"},
       {[](json &p) {
          p["programs"][0]["bodies"][0]["instructions"][1]["outputs"][0] = 5;
        },
        "programs[0].bodies[0].instructions[1].outputs[0]: buffer 5 does not "
        "exist (2 program buffers + 3 frame buffers for micro-batch 0)"},
       {[](json &p) {
          p["programs"][0]["bodies"][0]["instructions"][1]["attrs"]["axis"] = {
              {"times", 2}, {"per_micro_batch", 1}};
        },
        "programs[0].bodies[0].instructions[1].attrs.axis.times: times needs "
        "coord"},
       {[](json &p) {
          // Valid (1) at micro-batch 0, the first instance the loader
          // parses.
          p["programs"][0]["bodies"][0]["instructions"][1]["attrs"]["axis"] = {
              {"plus", 1}, {"per_micro_batch", INT64_MAX}};
        },
        "programs[0].bodies[0].instructions[1].attrs.axis: the expression "
        "overflows 64 bits at micro-batch 1"},
       {[](json &p) {
          p["programs"][0]["bodies"][0]["instructions"][1]["attrs"]["axis"] = {
              {"plus", 1}, {"per_micro_batch", 1}, {"every", 2}};
        },
        "programs[0].bodies[0].instructions[1].attrs.axis: a micro-batch "
        "expression has coord, times, plus and per_micro_batch, not 'every'"},
       {[](json &p) { p["programs"][0]["frames"][0][0]["view_of"] = 3; },
        "programs[0].frames[0][0].view_of: buffer 3 is neither a program "
        "buffer (ids < 2) nor an earlier template of this frame (the first "
        "has none)"},
       {[](json &p) { p["programs"][0]["frames"][0][2]["view_of"] = 4; },
        "programs[0].frames[0][2].view_of: buffer 4 is neither a program "
        "buffer (ids < 2) nor an earlier template of this frame (ids 2 to "
        "3)"},
       {[](json &p) { p["programs"][0]["frames"][0][1]["id"] = 3; },
        "programs[0].frames[0][1].id: a frame template has no id"},
       {[](json &p) { p["programs"][0]["frames"][0][1]["slots"] = -1; },
        "programs[0].frames[0][1].slots: expected a non-negative integer"},
       {[](json &p) {
          p["programs"][0]["micro_batch_slots"][0]["bytes"] = INT64_MAX;
        },
        "programs[0].frames[0][0].offset: the expression overflows 64 bits "
        "at micro-batch 1"},
       {[](json &p) { p["programs"][0]["frames"][0][2]["slots"] = 1; },
        "programs[0].frames[0][2].slots: slot group 1 does not exist (1 in "
        "micro_batch_slots)"},
       {[](json &p) { p["programs"][0]["micro_batch_slots"] = json::object(); },
        "programs[0].micro_batch_slots: expected an array"},
       {[](json &p) { p["programs"][0]["micro_batch_slots"][0]["count"] = 0; },
        "programs[0].micro_batch_slots[0].count: needs count >= 1"},
       {[](json &p) {
          p["programs"][0]["bodies"][1]["instructions"][0]["micro_batch"] = 0;
        },
        "programs[0].bodies[1].instructions[0].micro_batch: a body "
        "instruction takes its phase from its body and its micro-batch and "
        "chunk from its task"},
       {[](json &p) {
          p["programs"][0]["bodies"][1]["instructions"][0]["chunk"] = 1;
        },
        "programs[0].bodies[1].instructions[0].chunk: a body instruction "
        "takes its phase from its body and its micro-batch and chunk from its "
        "task"},
       {[](json &p) { p["programs"][0]["tasks"][0]["chunk"] = -1; },
        "programs[0].tasks[0].chunk: expected a non-negative integer, got "
        "-1"},
       // Checked after expansion, named where they were written.
       {[](json &p) {
          p["programs"][0]["bodies"][0]["instructions"][0]["inputs"] = {0, 1};
        },
        "p.json: programs[0].bodies[0].instructions[0] (tasks[0], "
        "micro-batch 0): node 'r0': kernel relu:"},
       {[](json &p) { p["programs"][0]["frames"][0][1].erase("slots"); },
        "programs[0].frames[0][1].view_of (micro-batch 1): must name an "
        "earlier buffer at the same offset"},
       {[](json &p) {
          p["programs"][0]["micro_batch_slots"][0]["bytes"] = 192;
        },
        "programs[0].frames[0][0].offset (micro-batch 1): 320 + 8 bytes "
        "exceeds arena_bytes 320"},
       {[](json &p) { p["programs"][0]["tasks"].erase(0); },
        "programs[0].bodies[1].instructions[0] (tasks[1], micro-batch 0) "
        "(relu r1): reads buffer 2 before anything writes it"}});
  // Outside a body a micro-batch expression has no micro-batch.
  json plan = planOf(explicitProgram());
  plan["programs"][0]["instructions"][1]["attrs"]["axis"] = {
      {"plus", 0}, {"per_micro_batch", 1}};
  EXPECT_NE(errorOf(plan).find("programs[0].instructions[1].attrs.axis."
                               "per_micro_batch: per_micro_batch is allowed "
                               "only in a task body's instructions"),
            std::string::npos)
      << errorOf(plan);
}

TEST(PlanTasks, NamesTheBodyInstructionOfEveryRank) {
  expectRejections(
      collectivePlan,
      {{[](json &p) {
          p["programs"][0]["bodies"][1]["instructions"][0]["tag"] = -2;
        },
        "rank 0: programs[0].bodies[1].instructions[0].tag: relative tag -2 "
        "+ 1 collectives posted before tasks[1] is -1"},
       {[](json &p) {
          p["programs"][0]["bodies"][1]["instructions"][2]["attrs"]["axis"]
           ["times"] = 2;
        },
        "rank 1: programs[0].bodies[1].instructions[2] (tasks[1], "
        "micro-batch 0): node 's': kernel softmax: attribute 'axis' is 2"},
       {[](json &p) {
          p["programs"][0]["bodies"][1]["instructions"][0]["tag"] = 0;
        },
        "rank 0: programs[0].bodies[1].instructions[0] (tasks[1], "
        "micro-batch 0)"},
       {[](json &p) {
          p["programs"][0]["bodies"][0]["instructions"][1]["axis"] = "data";
        },
        "rank 0: programs[0].bodies[0].instructions[1].axis (tasks[0], "
        "micro-batch 0): 'data' is not an axis of the mesh"}});
}

TEST(PlanTasks, LoadsOneRankAsTheWholePlanLoadsIt) {
  Plan whole = load(collectivePlan());
  Plan one = parsePlan(collectivePlan().dump(), "p.json", anyKernel, 1);
  ASSERT_EQ(one.loadedRank, 1);
  ASSERT_EQ(one.ranks.size(), 2u);
  EXPECT_FALSE(one.ranks[0].complete);
  EXPECT_TRUE(one.ranks[0].instructions.empty()); // it has no transfers
  const RankPlan &a = one.ranks[1], &b = whole.ranks[1];
  EXPECT_TRUE(a.complete);
  expectSameInstructions(a, b);
  // The softmax's axis is the rank's tensor coordinate.
  EXPECT_EQ(a.instructions[4].attrs.i("axis"), 1);
  // A rank the plan lacks: every rank is loaded (and the run's rank count
  // check names the mismatch).
  EXPECT_EQ(
      parsePlan(collectivePlan().dump(), "p.json", anyKernel, 2).loadedRank,
      -1);
  // The tensor group's members on two copies of the program: their
  // collectives are not the loaded rank's own, so every rank is loaded.
  json plan = collectivePlan();
  plan["programs"].push_back(plan["programs"][0]);
  plan["rank_programs"][1] = 1;
  Plan mixed = parsePlan(plan.dump(), "p.json", anyKernel, 1);
  EXPECT_EQ(mixed.loadedRank, -1);
  EXPECT_TRUE(mixed.ranks[0].complete);
}
