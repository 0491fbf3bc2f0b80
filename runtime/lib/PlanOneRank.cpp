//===- PlanOneRank.cpp - what one rank's process loads of a plan ----------===//
//
// loadPlan's onlyRank (Plan.h): the other ranks' transfers, for pairing and
// the deadlock simulation, and whether a rank may be loaded alone.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Plan.h"
#include "weft/runtime/PlanView.h"

#include "PlanField.h"

#include <map>
#include <optional>
#include <set>

using json = nlohmann::json;

namespace weft::rt::detail {

std::vector<size_t> transferIndices(const Field &f, const TaskOrigins *lazy) {
  auto isTransferAt = [](const json &inst) {
    return inst.is_object() && inst.contains("op") && inst["op"].is_string() &&
           isTransfer(inst["op"].get<std::string>());
  };
  std::vector<size_t> out;
  if (lazy && lazy->lazy) {
    // Per body: which of its instructions are transfers (a body's JSON is
    // read once, not once per task instance).
    std::map<int64_t, std::vector<char>> transfers;
    for (size_t i = 0; i < lazy->instructions.size(); ++i) {
      const TaskOrigin &o = lazy->instructions[i];
      std::vector<char> &body = transfers[o.from];
      if (size_t(o.index) >= body.size())
        body.resize(o.index + 1, -1);
      if (body[o.index] < 0)
        body[o.index] = isTransferAt(lazy->bodyInstruction(o.from, o.index));
      if (body[o.index])
        out.push_back(i);
    }
    return out;
  }
  const json &list = f.at("instructions").value;
  for (size_t i = 0; i < list.size(); ++i)
    if (isTransferAt(list[i]))
      out.push_back(i);
  return out;
}

Instruction parseTransfer(const Field &source, const Field &f,
                          const MeshShape &mesh, const RankPlan &rank) {
  json resolved;
  bool coordinates = hasCoordinates(source.value);
  if (coordinates) {
    resolved = source.value;
    resolveInstruction(resolved, mesh, rank.rank, source.file, source.path);
  }
  Field in = coordinates
                 ? Field(resolved, source.path, source.file, source.note)
                 : source;
  Instruction d;
  d.op = in.at("op").string();
  d.phase = in.at("phase").string();
  d.microBatch = in.at("micro_batch").nonNegative();
  d.tag = in.at("tag").nonNegative();
  if (d.op == "isend" || d.op == "irecv") {
    d.peer = in.at("peer").nonNegative();
    Field ids = in.at(d.op == "irecv" ? "outputs" : "inputs");
    if (ids.size() != 1)
      ids.fail(d.op + " moves exactly one buffer");
    size_t id = ids.at(0).nonNegative();
    size_t count = rank.origins && rank.origins->lazy
                       ? rank.origins->buffers.size()
                       : rank.buffers.size();
    if (id >= count)
      ids.at(0).fail("buffer does not exist");
    d.bytes = id < rank.buffers.size()
                  ? rank.buffers[id].bytes
                  : detail::originField(f, rank, "buffers", id)
                        .at("bytes")
                        .nonNegative();
  }
  return d;
}

namespace {

/// `value` at rank `r` where it is an integer or a plain coordinate
/// expression ({coord, times?, plus?}, evaluated as resolve does);
/// nullopt for anything else, an overflow or a negative result (the
/// caller parses the instruction again for the message).
std::optional<int64_t> quickValue(const json &value, const MeshShape &mesh,
                                  int64_t r) {
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    return v < 0 ? std::nullopt : std::optional<int64_t>(v);
  }
  if (!value.is_object())
    return std::nullopt;
  int64_t times = 1, plus = 0, coord = -1;
  for (const auto &[key, item] : value.items()) {
    if (key == "coord" && item.is_string()) {
      try {
        coord = mesh.coord(r, item.get_ref<const std::string &>());
      } catch (const Error &) {
        return std::nullopt;
      }
    } else if (key == "times" && item.is_number_integer()) {
      times = item.get<int64_t>();
    } else if (key == "plus" && item.is_number_integer()) {
      plus = item.get<int64_t>();
    } else {
      return std::nullopt;
    }
  }
  int64_t v;
  if (coord < 0 || __builtin_mul_overflow(times, coord, &v) ||
      __builtin_add_overflow(v, plus, &v) || v < 0)
    return std::nullopt;
  return v;
}

} // namespace

void placeTransfersAt(RankPlan &rank, const Field &f, const MeshShape &mesh,
                      const std::vector<size_t> &sites) {
  const TaskOrigins *lazy =
      rank.origins && rank.origins->lazy ? rank.origins.get() : nullptr;
  for (size_t k : sites) {
    size_t i = rank.explicitIndex[k];
    const json &source =
        lazy ? lazy->instruction(i) : f.value["instructions"][i];
    Instruction &d = rank.instructions[k];
    // The first rank of the program parsed this JSON: its tag (and an
    // isend's or irecv's peer) are there.
    auto valueOf = [&](const char *key) -> std::optional<int64_t> {
      auto it = source.find(key);
      return it == source.end() ? std::nullopt
                                : quickValue(*it, mesh, rank.rank);
    };
    std::optional<int64_t> tag = valueOf("tag");
    std::optional<int64_t> peer = d.op == "isend" || d.op == "irecv"
                                      ? valueOf("peer")
                                      : std::optional<int64_t>(-1);
    if (tag && peer) {
      d.tag = *tag;
      d.peer = *peer;
      continue;
    }
    d = parseTransfer(originField(f, rank, "instructions", k), f, mesh, rank);
  }
}

namespace {

/// `desc.index` at rank `r` from `entry`'s shard object `shard`, where the
/// index is its only coordinate expression and evaluates in [0, count).
template <typename Desc>
bool placeShardIndex(Desc &desc, const json &shard, const MeshShape &mesh,
                     int64_t r) {
  if (!shard.is_object())
    return false;
  for (const auto &[key, item] : shard.items()) {
    if (!hasCoordinates(item))
      continue;
    std::optional<int64_t> index =
        key == "index" ? quickValue(item, mesh, r) : std::nullopt;
    if (!index || *index >= desc.count)
      return false;
    desc.index = *index;
  }
  return true;
}

/// Whether every coordinate of named entry `entry` is a shard index that
/// placeShardIndex could set on `d`.
bool placeNamedAt(NamedBuffer &d, const json &entry, const MeshShape &mesh,
                  int64_t r) {
  for (const auto &[key, item] : entry.items()) {
    if (!hasCoordinates(item))
      continue;
    bool placed =
        key == "shard" ? d.shard && placeShardIndex(*d.shard, item, mesh, r)
        : key == "flat_shard"
            ? d.flatShard && placeShardIndex(*d.flatShard, item, mesh, r)
            : false;
    if (!placed)
      return false;
  }
  return true;
}

} // namespace

void placeNamedListsAt(RankPlan &rank, const Field &f, const MeshShape &mesh) {
  std::pair<const char *, std::vector<NamedBuffer> *> lists[] = {
      {"params", &rank.params},
      {"state", &rank.state},
      {"optimizer_state", &rank.optimizerState},
      {"inputs", &rank.inputs},
      {"outputs", &rank.outputs}};
  for (auto [key, parsed] : lists) {
    const json &list = f.at(key).value;
    bool placed = list.size() == parsed->size();
    for (size_t i = 0; placed && i < list.size(); ++i)
      placed = !hasCoordinates(list[i]) ||
               placeNamedAt((*parsed)[i], list[i], mesh, rank.rank);
    if (!placed)
      return parseNamedListsAt(f, mesh, rank.rank, rank);
  }
}

RankPlan parseTransfers(const Field &f, const MeshShape &mesh, int64_t r,
                        std::shared_ptr<const TaskOrigins> origins,
                        const std::vector<size_t> &transfers,
                        std::vector<size_t> &sites) {
  RankPlan rank;
  placeRank(rank, mesh, r, f.path);
  rank.origins = std::move(origins);
  rank.complete = false;
  rank.arenaBytes = f.at("arena_bytes").nonNegative();
  Field buffers = f.at("buffers");
  for (size_t i = 0; i < buffers.size(); ++i)
    rank.buffers.push_back(
        parseBuffer(detail::originField(f, rank, "buffers", i), i, rank));
  parseNamedListsAt(f, mesh, r, rank);
  rank.explicitIndex = transfers;
  for (size_t k = 0; k < transfers.size(); ++k) {
    Field source = detail::originField(f, rank, "instructions", k);
    if (hasCoordinates(source.value))
      sites.push_back(k);
    rank.instructions.push_back(parseTransfer(source, f, mesh, rank));
  }
  return rank;
}

bool loadableAlone(const json &root, const Plan &plan, const MeshShape &mesh,
                   int64_t r, const std::string &path) {
  const json &map = root["rank_programs"];
  const json &program = programOf(root, r, path, mesh);
  std::set<std::string> axes;
  // False where a collective holds an expression or a malformed axis (the
  // full load names it).
  auto collectAxes = [&](const json &list) {
    if (!list.is_array())
      return false;
    for (const json &inst : list) {
      if (!inst.is_object() || !inst.contains("op") ||
          !inst["op"].is_string() ||
          !isCollective(inst["op"].get<std::string>()))
        continue;
      if (hasCoordinates(inst) || !inst.contains("axis") ||
          !inst["axis"].is_string())
        return false;
      axes.insert(inst["axis"].get<std::string>());
    }
    return true;
  };
  if (program.contains("instructions") && !collectAxes(program["instructions"]))
    return false;
  if (program.contains("bodies")) {
    if (!program["bodies"].is_array())
      return false;
    for (const json &body : program["bodies"])
      if (!body.is_object() || !body.contains("instructions") ||
          !collectAxes(body["instructions"]))
        return false;
  }
  RankPlan mine, other;
  placeRank(mine, mesh, r, "");
  for (int64_t q = 0; q < int64_t(map.size()); ++q) {
    if (map[q] == map[r])
      continue;
    placeRank(other, mesh, q, "");
    for (const std::string &axis : axes)
      if (plan.groupOf(other, axis) == plan.groupOf(mine, axis))
        return false;
  }
  return true;
}

} // namespace weft::rt::detail
