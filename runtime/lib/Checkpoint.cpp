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
#include "weft/runtime/Reshard.h"
#include "weft/runtime/Sha256.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace weft::rt {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Version 2 describes each shard's pieces (Reshard.h); version 1 did not,
// and is still read by a run of the plan that wrote it.
constexpr int64_t kFormatVersion = 2;

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
  json tensors = json::object();
  for (const Executor::TensorPiece &t : executor.pieces())
    tensors[t.name] = pieceJson(t.piece);
  json mine = {{"rank", rank},
               {"file", shardName(rank)},
               {"bytes", (int64_t)shard.size()},
               {"sha256", sha256Bytes(shard)},
               {"tensors", tensors}};
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

namespace {

/// The shard `entry` of the manifest names, checked against its size and
/// SHA-256, parsed.
onnx::ModelProto readShard(const fs::path &stepDir, const json &entry,
                           const std::string &what) {
  fs::path shardPath = stepDir / entry.value("file", "");
  std::string shard = readFile(shardPath.string(), what);
  if ((int64_t)shard.size() != entry.value("bytes", int64_t(-1)) ||
      sha256Bytes(shard) != entry.value("sha256", ""))
    throw Error(what + ": '" + shardPath.string() +
                "' is not the shard the manifest lists (size or sha256 "
                "differs)");
  onnx::ModelProto model;
  if (!model.ParseFromString(shard))
    throw Error(what + ": '" + shardPath.string() + "' does not parse");
  return model;
}

/// Loads this rank's own shard: the plan is the one that wrote it.
void loadOwnShard(Executor &executor, int64_t rank, const fs::path &stepDir,
                  const json &shards, const std::string &what) {
  const json *entry = nullptr;
  for (const json &s : shards)
    if (s.is_object() && s.value("rank", int64_t(-1)) == rank)
      entry = &s;
  if (!entry)
    throw Error(what + ": the manifest lists no shard of rank " +
                std::to_string(rank));
  onnx::ModelProto model = readShard(stepDir, *entry, what);
  std::set<std::string> missing;
  for (const std::string &n : executor.stateNames())
    missing.insert(n);
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    executor.restore(t.name(), tensorBytes(t, stepDir.string(),
                                           what + ": '" + t.name() + "'"));
    missing.erase(t.name());
  }
  if (!missing.empty())
    throw Error(what + ": '" + (stepDir / entry->value("file", "")).string() +
                "' lacks '" + *missing.begin() + "'");
}

/// Loads a checkpoint another layout wrote: the whole tensors this rank
/// needs are assembled from every shard's pieces (lowest rank first), then
/// this rank takes its pieces of them.
void loadResharded(Executor &executor, const fs::path &stepDir,
                   const json &shards, const std::string &what) {
  std::map<std::string, Executor::TensorPiece> need;
  for (Executor::TensorPiece &t : executor.pieces())
    need[t.name] = std::move(t);
  std::vector<const json *> entries;
  for (const json &s : shards) {
    if (!s.is_object() || !s.contains("tensors") ||
        !s["tensors"].is_object())
      throw Error(what + ": the manifest does not describe its shards' "
                         "pieces (a checkpoint of format version 1): it "
                         "can only be resumed by the plan that wrote it");
    entries.push_back(&s);
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const json *a, const json *b) {
                     return a->value("rank", int64_t(0)) <
                            b->value("rank", int64_t(0));
                   });
  WholeTensors wholes;
  for (const json *entry : entries) {
    std::string label = what + ": rank " +
                        std::to_string(entry->value("rank", int64_t(-1))) +
                        "'s shard";
    onnx::ModelProto model = readShard(stepDir, *entry, what);
    for (const onnx::TensorProto &t : model.graph().initializer()) {
      auto want = need.find(t.name());
      if (want == need.end())
        continue;
      std::string at = label + ": '" + t.name() + "'";
      const json &tensors = (*entry)["tensors"];
      if (!tensors.contains(t.name()))
        throw Error(at + ": the manifest does not describe its piece");
      PieceDesc piece = parsePiece(tensors[t.name()], at);
      DType dtype = dtypeOfONNX(t.data_type(), at);
      // The whole tensor is this plan's: a checkpoint of another model's
      // shapes is refused before anything is assembled.
      const Executor::TensorPiece &mine = want->second;
      if (piece.shape != mine.piece.shape || dtype != mine.dtype)
        throw Error(at + " is " + shapeString(piece.shape) + " " +
                    dtypeName(dtype) + ", this plan's is " +
                    shapeString(mine.piece.shape) + " " +
                    dtypeName(mine.dtype));
      wholes.add(t.name(), dtype, piece,
                 tensorBytes(t, stepDir.string(), at), label);
    }
  }
  for (const auto &entry : need)
    executor.restoreWhole(entry.first, wholes.get(entry.first, what).bytes);
}

} // namespace

int64_t loadCheckpoint(const Plan &plan, Executor &executor, int64_t rank,
                       const std::string &dir, uint64_t seed, bool reshard) {
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
      (field("version") != kFormatVersion && field("version") != 1))
    throw Error(what + ": " + manifestPath.string() +
                " is not a weft-checkpoint of version 1 or " +
                std::to_string(kFormatVersion));
  auto differs = [&](const std::string &thing, const std::string &saved,
                     const std::string &now) {
    throw Error(what + ": the checkpoint's " + thing + " is " + saved +
                ", this run's is " + now);
  };
  if (field("model_sha256") != plan.modelSha256)
    differs("model (sha256)", field("model_sha256").dump(),
            plan.modelSha256);
  if (field("seed") != seed)
    differs("--seed", field("seed").dump(), std::to_string(seed));
  if (!field("shards").is_array() || !field("step").is_number_integer())
    throw Error(what + ": " + manifestPath.string() +
                " needs a list 'shards' and an integer 'step'");
  std::string planHash = sha256File(plan.path, what);
  if (field("plan_sha256") == planHash) {
    if (field("ranks") != (int64_t)plan.ranks.size())
      differs("rank count", field("ranks").dump(),
              std::to_string(plan.ranks.size()));
    loadOwnShard(executor, rank, stepDir, field("shards"), what);
  } else if (reshard) {
    loadResharded(executor, stepDir, field("shards"), what);
  } else {
    differs("plan (sha256)", field("plan_sha256").dump(),
            planHash + " (" + plan.path +
                "); --reshard loads it into this plan's layout");
  }
  return field("step").get<int64_t>();
}

} // namespace weft::rt
