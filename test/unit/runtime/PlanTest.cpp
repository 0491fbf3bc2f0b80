//===- PlanTest.cpp - the runtime's plan loader ---------------------------===//

#include "weft/runtime/Plan.h"

#include <gtest/gtest.h>

#include <climits>

using namespace weft::rt;
using json = nlohmann::json;

namespace {
/// A minimal valid one-rank plan: y = relu(x).
json validPlan() {
  return json::parse(R"({
    "format": "weft-plan", "version": 2,
    "model": {"path": "m.onnx", "sha256": ""},
    "mesh": {"axes": [{"name": "pipeline", "size": 1}]},
    "micro_batches": 1, "global_batch": 2,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "outputs": [{"name": "y", "dtype": "f32", "shape": [2]}],
    "rank_programs": [0],
    "programs": [{
      "arena_bytes": 72,
      "buffers": [
        {"id": 0, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 0, "kind": "input"},
        {"id": 1, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 64, "kind": "activation"}],
      "params": [], "state": [], "optimizer_state": [],
      "inputs": [{"name": "x", "buffer": 0}], "outputs": [{"name": "y", "buffer": 1}],
      "constants": [],
      "instructions": [{"op": "compute", "kernel": "relu", "inputs": [0], "outputs": [1],
                        "attrs": {}, "phase": "forward", "micro_batch": 0}]
    }]})");
}

bool known(const std::string &k) { return k == "relu"; }

/// The Error message of loading `plan`, or "" when it loads.
std::string errorOf(const json &plan) {
  try {
    parsePlan(plan.dump(), "p.json", known);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST(PlanLoader, AcceptsAValidPlan) {
  Plan plan = parsePlan(validPlan().dump(), "p.json", known);
  ASSERT_EQ(plan.ranks.size(), 1u);
  EXPECT_EQ(plan.ranks[0].arenaBytes, 72);
  EXPECT_EQ(plan.ranks[0].instructions[0].kernel, "relu");
}

TEST(PlanLoader, NamesTheFieldOfEveryRejection) {
  struct Case {
    std::function<void(json &)> edit;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](json &p) { p["format"] = "onnx"; },
       "p.json: format: expected \"weft-plan\""},
      {[](json &p) { p["version"] = 7; },
       "p.json: version: version 7 is not supported"},
      {[](json &p) { p["version"] = 1; },
       "p.json: version: version 1 is not supported (this weft-run reads "
       "version 2; compile the model again with this weftc)"},
      {[](json &p) { p.erase("programs"); },
       "p.json: : missing field 'programs'"},
      {[](json &p) { p["programs"] = json::array(); },
       "programs: a plan needs at least one program"},
      {[](json &p) { p["rank_programs"] = {1}; },
       "rank_programs[0]: program 1 does not exist (1 programs)"},
      {[](json &p) {
         p["rank_programs"] = {0, 0};
       },
       "rank_programs: 2 ranks for a mesh of 1 devices"},
      {[](json &p) { p["programs"][0]["rank"] = 0; },
       "programs[0].rank: a program is shared by ranks"},
      {[](json &p) {
         p["programs"][0]["instructions"][0]["tag"] = {{"coord", "tensor"}};
       },
       "programs[0].instructions[0].tag.coord: the mesh has no axis 'tensor'"},
      {[](json &p) {
         // A sub-axis of itself: no mesh axis to factor.
         p["mesh"]["sub_axes"] = {
             {{"name", "x"}, {"of", "x"}, {"size", 1}, {"stride", 1}}};
         p["programs"][0]["instructions"][0]["tag"] = {{"coord", "x"}};
       },
       "programs[0].instructions[0].tag.coord: the mesh has no axis 'x'"},
      {[](json &p) {
         p["mesh"]["axes"][0]["size"] = 2;
         p["rank_programs"] = {0, 0};
         p["programs"][0]["instructions"][0]["tag"] = {
             {"coord", "pipeline"}, {"times", INT64_MAX}, {"plus", 1}};
       },
       "rank 1: programs[0].instructions[0].tag: the expression overflows 64 "
       "bits"},
      {[](json &p) {
         p["programs"][0]["instructions"][0]["tag"] = {{"coord", "pipeline"},
                                                       {"time", 2}};
       },
       "programs[0].instructions[0].tag: a coordinate expression has coord, "
       "times and plus, not 'time'"},
      {[](json &p) { p["programs"][0]["buffers"][1]["id"] = 5; },
       "programs[0].buffers[1].id: buffer ids must be 0, 1, 2, ... in order"},
      {[](json &p) { p["programs"][0]["buffers"][0]["dtype"] = "f8"; },
       "programs[0].buffers[0].dtype: unknown dtype 'f8'"},
      {[](json &p) { p["programs"][0]["buffers"][0]["bytes"] = 4; },
       "programs[0].buffers[0].bytes: 4 bytes, but [2] f32 takes 8"},
      {[](json &p) { p["programs"][0]["buffers"][1]["offset"] = 68; },
       "programs[0].buffers[1].offset: 68 + 8 bytes exceeds arena_bytes 72"},
      // Found by the plan-loader fuzz target: a float at an odd address.
      {[](json &p) { p["programs"][0]["buffers"][1]["offset"] = 63; },
       "programs[0].buffers[1].offset: 63 is not a multiple of the f32 element "
       "size"},
      {[](json &p) { p["programs"][0]["buffers"][1]["kind"] = "scratch"; },
       "programs[0].buffers[1].kind: unknown buffer kind 'scratch'"},
      {[](json &p) { p["programs"][0]["buffers"][1]["view_of"] = 0; },
       "programs[0].buffers[1].view_of: must name an earlier buffer at the "
       "same "
       "offset"},
      {[](json &p) { p["programs"][0]["buffers"][0]["shape"] = {-1}; },
       "programs[0].buffers[0].shape[0]: expected a non-negative integer"},
      {[](json &p) { p["programs"][0]["instructions"][0]["op"] = "send"; },
       "programs[0].instructions[0].op: unknown instruction 'send'"},
      {[](json &p) { p["programs"][0]["instructions"][0]["kernel"] = "gelu9"; },
       "programs[0].instructions[0].kernel: unknown kernel 'gelu9'"},
      {[](json &p) { p["programs"][0]["instructions"][0]["kernel"] = "gelu"; },
       "programs[0].instructions[0].kernel: this backend has no kernel 'gelu' "
       "(it is in the kernel table)"},
      {[](json &p) {
         p["programs"][0]["instructions"][0]["name"] = "Relu_3";
         p["programs"][0]["buffers"][1]["shape"] = {1};
         p["programs"][0]["buffers"][1]["bytes"] = 4;
       },
       "programs[0].instructions[0]: node 'Relu_3': kernel relu: output 0 is "
       "[1] f32, relu writes [2] f32"},
      {[](json &p) {
         p["programs"][0]["instructions"][0]["attrs"] = {{"axis", 0}};
       },
       "programs[0].instructions[0]: kernel relu: unknown attribute 'axis'"},
      {[](json &p) { p["programs"][0]["instructions"][0]["outputs"] = {2}; },
       "programs[0].instructions[0].outputs[0]: buffer 2 does not exist"},
      {[](json &p) { p["programs"][0]["instructions"][0]["attrs"] = 3; },
       "programs[0].instructions[0].attrs: expected an object"},
      {[](json &p) { p["programs"][0]["inputs"][0]["buffer"] = 9; },
       "programs[0].inputs[0].buffer: buffer 9 does not exist"},
      {[](json &p) {
         p["programs"][0]["constants"] = {{{"buffer", 0}, {"data", "AAAA"}}};
       },
       "programs[0].constants[0].data: holds 3 bytes, buffer 0 has 8"},
      {[](json &p) {
         p["programs"][0]["constants"] = {{{"buffer", 0}, {"data", "!!!!"}}};
       },
       "programs[0].constants[0].data: malformed base64"},
      {[](json &p) { p["inputs"][0]["dtype"] = 3; },
       "inputs[0].dtype: expected a string"},
  };
  for (Case &c : cases) {
    json plan = validPlan();
    c.edit(plan);
    std::string message = errorOf(plan);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "expected '" << c.message << "', got '" << message << "'";
  }
  EXPECT_NE(std::string(errorOf(json::parse("[1]"))).find("expected an object"),
            std::string::npos);
}

TEST(PlanLoader, ReadsConstantsWrittenOncePerPlan) {
  // constant_data holds a constant's bytes (base64) under their SHA-256; a
  // program's constant names them by it (weftc: from 1 KiB, so the stages
  // of a pipeline share one causal mask).
  const std::string key =
      "9ac2197d9258257b1ae8463e4214e4cd0a578bc1517f2415928b91be4283fc48";
  json plan = validPlan();
  plan["constant_data"] = {{key, "QUJDREVGR0g="}}; // "ABCDEFGH"
  plan["programs"][0]["constants"] = {{{"buffer", 0}, {"data_sha256", key}}};
  Plan loaded = parsePlan(plan.dump(), "p.json", known);
  ASSERT_EQ(loaded.ranks[0].constants.size(), 1u);
  EXPECT_EQ(loaded.ranks[0].constants[0].bytes, "ABCDEFGH");

  json missing = plan;
  missing["constant_data"] = json::object();
  EXPECT_NE(errorOf(missing).find("programs[0].constants[0].data_sha256: no "
                                  "constant_data entry '" +
                                  key + "'"),
            std::string::npos)
      << errorOf(missing);
  json altered = plan;
  altered["constant_data"][key] = "QUJDREVGR1g="; // "ABCDEFGX"
  EXPECT_NE(errorOf(altered).find("constant_data." + key +
                                  ": its bytes' SHA-256 is "),
            std::string::npos)
      << errorOf(altered);
  json both = plan;
  both["programs"][0]["constants"][0]["data"] = "QUJDREVGR0g=";
  EXPECT_NE(errorOf(both).find("programs[0].constants[0]: holds data and "
                               "data_sha256"),
            std::string::npos)
      << errorOf(both);
}

TEST(PlanLoader, RejectsTextThatIsNotJSON) {
  EXPECT_THROW(parsePlan("{", "p.json", known), Error);
}

TEST(Base64, DecodesRfc4648Vectors) {
  EXPECT_EQ(decodeBase64(""), "");
  EXPECT_EQ(decodeBase64("Zg=="), "f");
  EXPECT_EQ(decodeBase64("Zm8="), "fo");
  EXPECT_EQ(decodeBase64("Zm9vYmFy"), "foobar");
  EXPECT_THROW(decodeBase64("Zm9"), Error);
}
