//===- Checkpoint.cpp - sharded, atomic training checkpoints --------------===//
//
// The format and the crash guarantee are in Checkpoint.h. The order of a
// save: every rank writes its shard durably; rank 0 gathers the shards'
// sizes and hashes, writes the manifest, then `latest`, then prunes.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Checkpoint.h"

#include "weft/runtime/Files.h"
#include "weft/runtime/OnnxTensor.h"
#include "weft/runtime/Sha256.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

namespace weft::rt {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int64_t kFormatVersion = 1;

std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld", (long long)step);
  return name;
}

std::string shardName(int64_t rank) {
  return "rank_" + std::to_string(rank) + ".onnx";
}

/// A shard: an ONNX model holding the rank's tensors as initializers.
std::string serializeShard(const Executor &executor, int64_t rank,
                           int64_t step) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("weft-run");
  for (auto [key, value] : {std::pair<std::string, std::string>{
                                "weft.rank", std::to_string(rank)},
                            {"weft.step", std::to_string(step)}}) {
    auto *prop = model.add_metadata_props();
    prop->set_key(key);
    prop->set_value(value);
  }
  for (Executor::StateTensor &t : executor.snapshot())
    *model.mutable_graph()->add_initializer() =
        makeTensorProto(t.name, t.dtype, t.shape, std::move(t.bytes));
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error("--checkpoint: cannot serialize rank " + std::to_string(rank) +
                "'s shard");
  return bytes;
}

/// The step directory `dir`/latest names, or "" when there is none.
std::string latestName(const std::string &dir) {
  std::ifstream in(fs::path(dir) / "latest");
  std::string name;
  std::getline(in, name);
  return name;
}

/// The step directories under `dir` that hold a manifest, oldest first.
std::vector<std::string> completeSteps(const std::string &dir) {
  std::vector<std::string> steps;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory() &&
        entry.path().filename().string().rfind("step_", 0) == 0 &&
        fs::exists(entry.path() / "manifest.json"))
      steps.push_back(entry.path().filename().string());
  std::sort(steps.begin(), steps.end()); // zero-padded: lexical = numeric
  return steps;
}

} // namespace

void saveCheckpoint(const Plan &plan, const Executor &executor,
                    Communicator &comm, const std::string &dir, int64_t step,
                    uint64_t seed, int64_t keep) {
  int64_t rank = comm.rank();
  std::string name = stepName(step);
  fs::path stepDir = fs::path(dir) / name;
  std::string latestPath = (fs::path(dir) / "latest").string();
  // Rank 0 prepares the step directory. The checkpoint `latest` names is
  // never touched: if it is this very step (a resumed run that trained no
  // step), there is nothing to save. Anything else there (an interrupted
  // save, or another run's checkpoint of this step) is cleared.
  int64_t skip = 0;
  if (rank == 0) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (fs::exists(stepDir / "manifest.json") && latestName(dir) == name) {
      skip = 1;
    } else {
      fs::remove_all(stepDir, ec);
      if (!fs::create_directories(stepDir, ec))
        throw Error("--checkpoint: cannot create '" + stepDir.string() + "'");
    }
  }
  if (comm.allGather(skip)[0])
    return;

  std::string shard = serializeShard(executor, rank, step);
  writeFileAtomically((stepDir / shardName(rank)).string(), shard,
                      "--checkpoint");
  json mine = {{"rank", rank},
               {"file", shardName(rank)},
               {"bytes", (int64_t)shard.size()},
               {"sha256", sha256Bytes(shard)}};
  std::vector<std::string> shards = comm.gatherStrings(mine.dump(), 0);
  if (rank == 0) {
    json manifest = {{"format", "weft-checkpoint"},
                     {"version", kFormatVersion},
                     {"step", step},
                     {"seed", seed},
                     {"plan_sha256", sha256File(plan.path, "--checkpoint")},
                     {"model_sha256", plan.modelSha256},
                     {"ranks", (int64_t)plan.ranks.size()},
                     {"shards", json::array()}};
    for (const std::string &s : shards)
      manifest["shards"].push_back(json::parse(s));
    writeFileAtomically((stepDir / "manifest.json").string(),
                        manifest.dump(1) + "\n", "--checkpoint");
    // The checkpoint is complete; only now does `latest` move to it.
    writeFileAtomically(latestPath, name + "\n", "--checkpoint");
    // Prune: this checkpoint and the newest keep - 1 complete ones before
    // it stay; older ones and interrupted saves (no manifest) go. Complete
    // checkpoints of later steps (another run's) are left alone.
    std::vector<std::string> complete = completeSteps(dir);
    std::set<std::string> kept = {name};
    for (auto it = complete.rbegin();
         it != complete.rend() && (int64_t)kept.size() < keep; ++it)
      if (*it < name)
        kept.insert(*it);
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(dir, ec)) {
      std::string entryName = entry.path().filename().string();
      bool isComplete = fs::exists(entry.path() / "manifest.json");
      if (entry.is_directory() && entryName.rfind("step_", 0) == 0 &&
          !kept.count(entryName) && (!isComplete || entryName < name))
        fs::remove_all(entry.path(), ec);
    }
  }
  comm.barrier();
}

int64_t loadCheckpoint(const Plan &plan, Executor &executor, int64_t rank,
                       const std::string &dir, uint64_t seed) {
  const std::string what = "--resume " + dir;
  std::string latest = latestName(dir);
  fs::path stepDir = latest.empty() ? fs::path(dir) : fs::path(dir) / latest;
  fs::path manifestPath = stepDir / "manifest.json";
  if (!fs::exists(manifestPath))
    throw Error(what + ": no complete checkpoint ('" + manifestPath.string() +
                "' is missing)");
  json manifest =
      json::parse(readFile(manifestPath.string(), what), nullptr, false);
  auto field = [&](const char *key) -> const json & {
    if (!manifest.is_object() || !manifest.contains(key))
      throw Error(what + ": " + manifestPath.string() + " has no '" + key +
                  "'");
    return manifest[key];
  };
  if (field("format") != "weft-checkpoint" ||
      field("version") != kFormatVersion)
    throw Error(what + ": " + manifestPath.string() +
                " is not a weft-checkpoint of version " +
                std::to_string(kFormatVersion));
  auto differs = [&](const std::string &thing, const std::string &saved,
                     const std::string &now) {
    throw Error(what + ": the checkpoint's " + thing + " is " + saved +
                ", this run's is " + now);
  };
  if (field("ranks") != (int64_t)plan.ranks.size())
    differs("rank count", field("ranks").dump(),
            std::to_string(plan.ranks.size()));
  if (field("model_sha256") != plan.modelSha256)
    differs("model (sha256)", field("model_sha256").get<std::string>(),
            plan.modelSha256);
  std::string planHash = sha256File(plan.path, what);
  if (field("plan_sha256") != planHash)
    differs("plan (sha256)", field("plan_sha256").get<std::string>(),
            planHash + " (" + plan.path + ")");
  if (field("seed") != seed)
    differs("--seed", field("seed").dump(), std::to_string(seed));

  const json *entry = nullptr;
  for (const json &s : field("shards"))
    if (s.value("rank", int64_t(-1)) == rank)
      entry = &s;
  if (!entry)
    throw Error(what + ": the manifest lists no shard of rank " +
                std::to_string(rank));
  fs::path shardPath = stepDir / entry->value("file", "");
  std::string shard = readFile(shardPath.string(), what);
  if ((int64_t)shard.size() != entry->value("bytes", int64_t(-1)) ||
      sha256Bytes(shard) != entry->value("sha256", ""))
    throw Error(what + ": '" + shardPath.string() +
                "' is not the shard the manifest lists (size or sha256 "
                "differs)");
  onnx::ModelProto model;
  if (!model.ParseFromString(shard))
    throw Error(what + ": '" + shardPath.string() + "' does not parse");
  std::set<std::string> missing;
  for (const std::string &n : executor.stateNames())
    missing.insert(n);
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    executor.restore(t.name(), tensorBytes(t, stepDir.string(),
                                           what + ": '" + t.name() + "'"));
    missing.erase(t.name());
  }
  if (!missing.empty())
    throw Error(what + ": '" + shardPath.string() + "' lacks '" +
                *missing.begin() + "'");
  return field("step").get<int64_t>();
}

} // namespace weft::rt
