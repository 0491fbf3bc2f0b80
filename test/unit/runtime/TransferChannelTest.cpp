//===- TransferChannelTest.cpp - point-to-point channels and their order --===//
//
// NCCL matches a pair of ranks' sends and receives by order: the loader
// refuses a plan whose two ends post a channel's transfers in different
// orders, and channelRounds groups the channels into the communicator
// splits that make them (NcclCommunicator.cpp).
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Communicator.h"
#include "weft/runtime/Plan.h"

#include "PlanJson.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

json transfer(const std::string &op, int64_t tag, int64_t buffer) {
  json inst = {{"op", op},
               {"tag", tag},
               {"phase", "forward"},
               {"micro_batch", 0},
               {"inputs", json::array()},
               {"outputs", json::array()}};
  if (op == "isend" || op == "irecv")
    inst["peer"] = op == "isend" ? 1 : 0;
  inst[op == "irecv" ? "outputs" : "inputs"] = {buffer};
  return inst;
}

/// Two pipeline ranks: rank 0 sends its inputs x (tag 1) and z (tag 2) to
/// rank 1, which receives them in the same order and outputs z.
json twoTransfers() {
  json plan = json::parse(R"({
    "format": "weft-plan", "version": 2,
    "model": {"path": "m.onnx", "sha256": ""},
    "mesh": {"axes": [{"name": "pipeline", "size": 2}]},
    "micro_batches": 1, "global_batch": 2,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]},
               {"name": "z", "dtype": "f32", "shape": [2]}],
    "outputs": [{"name": "y", "dtype": "f32", "shape": [2]}]})");
  json sender = json::parse(R"({
    "rank": 0, "coords": {"pipeline": 0}, "arena_bytes": 128,
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 0, "kind": "input"},
      {"id": 1, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 64, "kind": "input"}],
    "params": [], "state": [], "optimizer_state": [],
    "inputs": [{"name": "x", "buffer": 0}, {"name": "z", "buffer": 1}],
    "outputs": [], "constants": []})");
  sender["instructions"] = {transfer("isend", 1, 0), transfer("isend", 2, 1),
                            transfer("wait_send", 1, 0),
                            transfer("wait_send", 2, 1)};
  json receiver = json::parse(R"({
    "rank": 1, "coords": {"pipeline": 1}, "arena_bytes": 128,
    "buffers": [
      {"id": 0, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 0, "kind": "activation"},
      {"id": 1, "dtype": "f32", "shape": [2], "bytes": 8, "offset": 64, "kind": "activation"}],
    "params": [], "state": [], "optimizer_state": [],
    "inputs": [], "outputs": [{"name": "y", "buffer": 1}],
    "constants": []})");
  receiver["instructions"] = {transfer("irecv", 1, 0), transfer("irecv", 2, 1),
                              transfer("wait_recv", 1, 0),
                              transfer("wait_recv", 2, 1)};
  test::setRanks(plan, {sender, receiver});
  return plan;
}

Plan parse(const json &plan) {
  return parsePlan(plan.dump(), "p.json",
                   [](const std::string &) { return true; });
}

std::string errorOf(const json &plan) {
  try {
    parse(plan);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

using Channel = std::pair<int64_t, int64_t>;

} // namespace

TEST(TransferChannels, AcceptsOneOrderAtBothEnds) {
  Plan plan = parse(twoTransfers());
  EXPECT_EQ(transferChannels(plan), (std::vector<Channel>{{0, 1}}));
}

TEST(TransferChannels, RefusesAChannelPostedInTwoOrders) {
  json plan = twoTransfers();
  std::swap(plan["programs"][1]["instructions"][0],
            plan["programs"][1]["instructions"][1]);
  // MPI would have matched them by tag; NCCL would swap x and z.
  EXPECT_NE(errorOf(plan).find(
                "p.json: programs[0].instructions[0].tag: tag 1 is rank 0's "
                "send #0 to rank 1, whose receive #0 from it is tag 2: a "
                "pair of ranks must post its transfers in one order at both "
                "ends (NCCL matches them by order)"),
            std::string::npos)
      << errorOf(plan);
}

TEST(TransferChannels, RoundsPutEachRankInOneChannelAtMost) {
  // A 4-stage pipeline's activations and gradients, an interleaved
  // schedule's wrap-around from the last stage to the first, and a skip
  // connection from stage 0 to stage 2.
  std::vector<Channel> channels = {{0, 1}, {1, 0}, {1, 2}, {2, 1}, {2, 3},
                                   {3, 2}, {3, 0}, {0, 3}, {0, 2}};
  auto rounds = channelRounds(channels);
  std::multiset<Channel> made;
  for (const auto &round : rounds) {
    std::set<int64_t> ranks;
    for (auto [from, to] : round) {
      EXPECT_TRUE(ranks.insert(from).second) << from;
      EXPECT_TRUE(ranks.insert(to).second) << to;
      made.insert({from, to});
    }
  }
  EXPECT_EQ(made, std::multiset<Channel>(channels.begin(), channels.end()));
  // Rank 0 is in 5 channels: greedy needs at most 2 * 5 - 1 rounds, and
  // never fewer than 5.
  EXPECT_GE(rounds.size(), 5u);
  EXPECT_LE(rounds.size(), 9u);
  // Every rank computes the same rounds from the same list.
  EXPECT_EQ(channelRounds(channels), rounds);
}

TEST(TransferChannels, APipelineOfTwoNeedsTwoRounds) {
  auto rounds = channelRounds({{0, 1}, {1, 0}});
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0], (std::vector<Channel>{{0, 1}}));
  EXPECT_EQ(rounds[1], (std::vector<Channel>{{1, 0}}));
  EXPECT_TRUE(channelRounds({}).empty());
}
