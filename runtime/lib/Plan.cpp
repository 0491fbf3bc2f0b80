//===- Plan.cpp - reading and validating execution plans ------------------===//

#include "weft/runtime/Plan.h"

#include "weft/runtime/Files.h"
#include "weft/runtime/PlanView.h"
#include "weft/runtime/Sha256.h"

#include "PlanField.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <memory>
#include <set>

using json = nlohmann::json;

namespace weft::rt {

namespace {

using detail::BodyInstruction;
using detail::copyBodyInstruction;
using detail::Field;
using detail::loadableAlone;
using detail::parseBuffer;
using detail::parseNamedListsAt;
using detail::parseTransfers;
using detail::placed;
using detail::placeFrameBuffer;
using detail::placeRank;
using detail::transferIndices;

std::vector<NamedBuffer> namedBuffers(const Field &list, int64_t count) {
  std::vector<NamedBuffer> out;
  for (size_t i = 0; i < list.size(); ++i) {
    Field f = list.at(i);
    int64_t id = f.at("buffer").nonNegative();
    if (id >= count)
      f.at("buffer").fail("buffer " + std::to_string(id) + " does not exist");
    out.push_back({f.at("name").string(), id, std::nullopt});
    if (f.has("init"))
      out.back().init = f.at("init").string();
    if (f.has("fill")) {
      Field fill = f.at("fill");
      for (size_t k = 0; k < fill.size(); ++k)
        out.back().fill.push_back(fill.at(k).number());
    }
  }
  return out;
}

/// Each master copy's "init" names a 16-bit parameter of the rank, and the
/// master is f32; a "fill" gives an f32 buffer one value per element.
void checkOptimizerState(const Field &list, const RankPlan &rank) {
  for (size_t i = 0; i < rank.optimizerState.size(); ++i) {
    const NamedBuffer &master = rank.optimizerState[i];
    const BufferDesc &b = rank.buffers[master.buffer];
    if (!master.fill.empty() &&
        (b.dtype != DType::F32 ||
         int64_t(master.fill.size()) != TensorType{b.dtype, b.shape}.numel()))
      list.at(i).at("fill").fail(
          std::to_string(master.fill.size()) + " values for a " +
          shapeString(b.shape) + " " + dtypeName(b.dtype) +
          " buffer: expected one per element of an f32 buffer");
    if (master.init.empty())
      continue;
    Field f = list.at(i).at("init");
    auto param = std::find_if(
        rank.params.begin(), rank.params.end(),
        [&](const NamedBuffer &p) { return p.name == master.init; });
    if (param == rank.params.end())
      f.fail("'" + master.init + "' is not a parameter of this rank");
    DType p = rank.buffers[param->buffer].dtype,
          m = rank.buffers[master.buffer].dtype;
    if ((p != DType::F16 && p != DType::BF16) || m != DType::F32)
      f.fail("a master copy is f32 beside an f16 or bf16 parameter; here " +
             std::string(dtypeName(m)) + " beside " + dtypeName(p));
    // Of the same tensor (ZeRO may hold either as a piece of it).
    auto whole = [&](const NamedBuffer &named) {
      return named.flatShard ? named.flatShard->shape
                             : rank.buffers[named.buffer].shape;
    };
    if (whole(master) != whole(*param))
      f.fail("a master copy of a " + shapeString(whole(*param)) +
             " parameter is " + shapeString(whole(master)));
  }
}

/// The "shard" fields of `named` (params: tensor-parallel slices; inputs:
/// a data-parallel replica's rows; after parseFlatShards); checked against
/// the mesh in checkMesh.
void parseShards(const Field &list, const RankPlan &rank,
                 std::vector<NamedBuffer> &named) {
  for (size_t i = 0; i < named.size(); ++i) {
    Field f = list.at(i);
    if (!f.has("shard") || f.at("shard").value.is_null())
      continue;
    Field s = f.at("shard");
    ShardDesc d{s.at("dim").nonNegative(), s.at("blocks").nonNegative(),
                s.at("index").nonNegative(), s.at("count").nonNegative()};
    // The rank's slice: the buffer, or the tensor a ZeRO piece is of.
    const std::vector<int64_t> &shape =
        named[i].flatShard ? named[i].flatShard->shape
                           : rank.buffers[named[i].buffer].shape;
    if (d.dim >= int64_t(shape.size()))
      s.at("dim").fail("dimension " + std::to_string(d.dim) + " of a " +
                       shapeString(shape) + " buffer");
    if (d.blocks < 1 || d.count < 1 || d.index >= d.count)
      s.fail("needs blocks >= 1, count >= 1 and index < count");
    if (shape[d.dim] % d.blocks)
      s.at("blocks").fail(std::to_string(d.blocks) +
                          " blocks do not divide the shard's " +
                          std::to_string(shape[d.dim]) + " elements");
    named[i].shard = d;
  }
}

/// The "flat_shard" fields of `named` (ZeRO's pieces of parameters and
/// optimizer state); the data axis is checked in checkMesh.
void parseFlatShards(const Field &list, const RankPlan &rank,
                     std::vector<NamedBuffer> &named) {
  for (size_t i = 0; i < named.size(); ++i) {
    Field f = list.at(i);
    if (!f.has("flat_shard"))
      continue;
    Field s = f.at("flat_shard");
    FlatShardDesc d{s.at("shape").shape(), s.at("index").nonNegative(),
                    s.at("count").nonNegative()};
    if (d.count < 1 || d.index >= d.count)
      s.fail("needs count >= 1 and index < count");
    if (d.elements() == INT64_MAX)
      s.at("shape").fail("too many elements");
    const BufferDesc &b = rank.buffers[named[i].buffer];
    if (b.shape != std::vector<int64_t>{d.piece()})
      s.fail("a piece of " + shapeString(d.shape) + " over " +
             std::to_string(d.count) + " ranks is [" +
             std::to_string(d.piece()) + "], buffer " +
             std::to_string(named[i].buffer) + " is " + shapeString(b.shape));
    named[i].flatShard = d;
  }
}

/// The rank's parameters, state, optimizer state, inputs and outputs (after
/// its buffers): where the ranks of a program differ (shards).
void parseNamedLists(const Field &f, RankPlan &rank) {
  int64_t count = rank.buffers.size();
  rank.params = namedBuffers(f.at("params"), count);
  parseFlatShards(f.at("params"), rank, rank.params);
  parseShards(f.at("params"), rank, rank.params);
  rank.state = namedBuffers(f.at("state"), count);
  rank.optimizerState = namedBuffers(f.at("optimizer_state"), count);
  parseFlatShards(f.at("optimizer_state"), rank, rank.optimizerState);
  parseShards(f.at("optimizer_state"), rank, rank.optimizerState);
  checkOptimizerState(f.at("optimizer_state"), rank);
  rank.inputs = namedBuffers(f.at("inputs"), count);
  parseShards(f.at("inputs"), rank, rank.inputs);
  rank.outputs = namedBuffers(f.at("outputs"), count);
}

/// Instruction `in` of `rank` (whose buffers are parsed), checked: a compute
/// instruction against its kernel's entry in the specification table.
Instruction
parseInstruction(const Field &in, const RankPlan &rank,
                 const std::function<bool(const std::string &)> &knownKernel) {
  int64_t count = rank.buffers.size();
  Instruction d;
  d.op = in.at("op").string();
  if (d.op != "compute" && !isTransfer(d.op) && !isCollective(d.op) &&
      !isCollectiveWait(d.op))
    in.at("op").fail("unknown instruction '" + d.op +
                     "' (expected compute, isend, irecv, wait_send, "
                     "wait_recv, all_reduce, all_gather, reduce_scatter "
                     "or wait_collective)");
  d.name = in.has("name") ? in.at("name").string() : "";
  d.phase = in.at("phase").string();
  d.microBatch = in.at("micro_batch").nonNegative();
  d.chunk = in.has("chunk") ? in.at("chunk").nonNegative() : -1;
  d.inputs = in.at("inputs").ids(count);
  d.outputs = in.at("outputs").ids(count);
  if (d.op == "compute") {
    d.kernel = in.at("kernel").string();
    const KernelSpec *spec = findKernelSpec(d.kernel);
    if (!spec)
      in.at("kernel").fail("unknown kernel '" + d.kernel + "'");
    if (!knownKernel(d.kernel))
      in.at("kernel").fail("this backend has no kernel '" + d.kernel +
                           "' (it is in the kernel table)");
    Field attrs = in.at("attrs");
    if (!attrs.value.is_object())
      attrs.fail("expected an object");
    try {
      CheckedKernel checked = checkKernel(*spec, placed(rank, d.inputs),
                                          placed(rank, d.outputs), attrs.value);
      d.attrs = std::move(checked.attrs);
      d.cost = checked.cost;
    } catch (const Error &e) {
      in.fail((d.name.empty() ? "" : "node '" + d.name + "': ") + "kernel " +
              d.kernel + ": " + e.what());
    }
  } else if (isCollective(d.op)) {
    d.tag = in.at("tag").nonNegative();
    d.axis = in.at("axis").string();
    if (in.has("reduction")) {
      d.reduction = in.at("reduction").string();
      if (d.reduction != "sum" &&
          (d.reduction != "max" || d.op != "all_reduce"))
        in.at("reduction")
            .fail("'" + d.reduction + "': expected sum" +
                  (d.op == "all_reduce" ? " or max" : ""));
    }
    // One float buffer in, one of its type out: the same shape for an
    // all-reduce; for the others, checked against the axis's size with
    // the mesh (checkMesh).
    if (d.inputs.size() != 1 || d.outputs.size() != 1)
      in.fail(d.op + " reads one buffer and writes one");
    const BufferDesc &x = rank.buffers[d.inputs[0]],
                     &y = rank.buffers[d.outputs[0]];
    bool sameShape = d.op == "all_reduce";
    if (d.op != "all_reduce") {
      d.dim = in.at("dim").nonNegative();
      if (d.dim >= int64_t(x.shape.size()))
        in.at("dim").fail("dimension " + std::to_string(d.dim) + " of a " +
                          shapeString(x.shape) + " buffer");
    }
    if (x.dtype != y.dtype || (sameShape && x.shape != y.shape) ||
        x.shape.size() != y.shape.size())
      in.at("outputs").fail(d.op + " writes " + shapeString(y.shape) + " " +
                            dtypeName(y.dtype) + ", its input is " +
                            shapeString(x.shape) + " " + dtypeName(x.dtype));
    if (!isFloat(x.dtype))
      in.at("inputs").fail(d.op + (sameShape ? " sums" : " moves") +
                           " f32, f64, f16 or bf16, not " + dtypeName(x.dtype));
  } else if (isCollectiveWait(d.op)) {
    d.tag = in.at("tag").nonNegative(); // checkInstructionOrder pairs it
  } else {
    d.tag = in.at("tag").nonNegative();
    if (d.op == "isend" || d.op == "irecv")
      d.peer = in.at("peer").nonNegative();
    // Each transfer moves one buffer: the isend's input, the irecv's
    // output; the waits name the same buffer to keep it live.
    size_t expected = d.op == "irecv" ? d.outputs.size() : d.inputs.size();
    if (expected != 1)
      in.at(d.op == "irecv" ? "outputs" : "inputs")
          .fail(d.op + " moves exactly one buffer");
    if (d.op == "isend" || d.op == "irecv")
      d.bytes =
          rank.buffers[d.op == "irecv" ? d.outputs[0] : d.inputs[0]].bytes;
  }
  return d;
}

/// Instruction `in` at rank `r`: parsed as it is, or from a copy with the
/// rank's coordinates filled in when it holds an expression.
Instruction
parseResolved(const Field &in, const MeshShape &mesh, int64_t r,
              const RankPlan &rank,
              const std::function<bool(const std::string &)> &knownKernel) {
  if (!hasCoordinates(in.value))
    return parseInstruction(in, rank, knownKernel);
  json resolved = in.value;
  resolveInstruction(resolved, mesh, r, in.file, in.path);
  return parseInstruction(Field(resolved, in.path, in.file, in.note), rank,
                          knownKernel);
}

/// `text` (base64) decoded; fails naming `f`.
std::string decodeBase64At(const Field &f) {
  try {
    return decodeBase64(f.string());
  } catch (const Error &e) {
    f.fail(e.what());
  }
}

/// The plan's `constant_data`: constants' bytes by their SHA-256, each
/// decoded and checked against its name once for all the programs.
class SharedConstants {
public:
  explicit SharedConstants(const Field &root)
      : table(root.has("constant_data") ? &root.value["constant_data"]
                                        : nullptr),
        root(root) {}

  /// The bytes `key` (a data_sha256 field) names.
  const std::string &bytes(const Field &key) {
    std::string hash = key.string();
    auto it = decoded.find(hash);
    if (it != decoded.end())
      return it->second;
    if (!table || !table->is_object() || !table->contains(hash))
      key.fail("no constant_data entry '" + hash + "'");
    Field data = root.at("constant_data").at(hash);
    std::string bytes = decodeBase64At(data);
    std::string actual = sha256Bytes(bytes);
    if (actual != hash)
      data.fail("its bytes' SHA-256 is " + actual + ", not its name");
    return decoded.emplace(hash, std::move(bytes)).first->second;
  }

private:
  const json *table;
  const Field &root;
  std::map<std::string, std::string> decoded;
};

/// Rank `r`'s copy of program `f` (explicit; `origins` says where a
/// task-form program's buffers and instructions were written), whose
/// coordinate expressions it evaluates where they stand (its named lists'
/// shards, the instructions holding one: their indices go to `sites`),
/// reading everything else as it is.
RankPlan parseRank(const Field &f, const MeshShape &mesh, int64_t r,
                   const std::function<bool(const std::string &)> &knownKernel,
                   std::shared_ptr<const TaskOrigins> origins,
                   SharedConstants &shared, std::vector<size_t> &sites) {
  RankPlan rank;
  placeRank(rank, mesh, r, f.path);
  rank.origins = std::move(origins);
  rank.arenaBytes = f.at("arena_bytes").nonNegative();

  const TaskOrigins *lazy =
      rank.origins && rank.origins->lazy ? rank.origins.get() : nullptr;
  size_t bufferCount = lazy ? lazy->buffers.size() : f.at("buffers").size();
  rank.buffers.reserve(bufferCount);
  // A task-form program's frame templates, each parsed and checked at its
  // first micro-batch: (frame, template) -> (buffer, micro-batch).
  std::map<std::pair<int64_t, int64_t>, std::pair<BufferDesc, int64_t>>
      templates;
  for (size_t i = 0; i < bufferCount; ++i) {
    const TaskOrigin *o = lazy ? &lazy->buffers[i] : nullptr;
    if (o && o->from >= 0) {
      auto it = templates.find({o->from, o->index});
      if (it != templates.end() &&
          placeFrameBuffer(it->second.first, it->second.second, i, *lazy, rank))
        continue;
      BufferDesc d =
          parseBuffer(detail::originField(f, rank, "buffers", i), i, rank);
      templates.insert({{o->from, o->index}, {d, o->microBatch}});
      rank.buffers.push_back(std::move(d));
      continue;
    }
    rank.buffers.push_back(
        parseBuffer(detail::originField(f, rank, "buffers", i), i, rank));
  }
  parseNamedListsAt(f, mesh, r, rank);

  int64_t count = rank.buffers.size();
  Field constants = f.at("constants");
  for (size_t i = 0; i < constants.size(); ++i) {
    Field c = constants.at(i);
    ConstantDesc d;
    d.buffer = c.at("buffer").nonNegative();
    if (d.buffer >= count)
      c.at("buffer").fail("buffer does not exist");
    bool byHash = c.has("data_sha256");
    if (byHash && c.has("data"))
      c.fail("holds data and data_sha256: a constant's bytes are inline or "
             "in constant_data, not both");
    d.bytes = byHash ? shared.bytes(c.at("data_sha256"))
                     : decodeBase64At(c.at("data"));
    if (static_cast<int64_t>(d.bytes.size()) != rank.buffers[d.buffer].bytes)
      c.at(byHash ? "data_sha256" : "data")
          .fail("holds " + std::to_string(d.bytes.size()) + " bytes, buffer " +
                std::to_string(d.buffer) + " has " +
                std::to_string(rank.buffers[d.buffer].bytes));
    rank.constants.push_back(std::move(d));
  }

  // A task-form program's body instructions without expressions, each
  // parsed and checked once per frame: (body, instruction, frame) -> it.
  std::map<std::tuple<int64_t, int64_t, int64_t>, BodyInstruction> bodies;
  size_t instructionCount =
      lazy ? lazy->instructions.size() : f.at("instructions").size();
  rank.instructions.reserve(instructionCount);
  for (size_t i = 0; i < instructionCount; ++i) {
    if (lazy && !lazy->holdsExpression(i)) {
      const TaskOrigin &o = lazy->instructions[i];
      std::tuple<int64_t, int64_t, int64_t> key{o.from, o.index,
                                                lazy->frameOf(o.microBatch)};
      auto it = bodies.find(key);
      if (it != bodies.end() && copyBodyInstruction(it->second, i, *lazy, rank))
        continue;
      Instruction d = parseInstruction(
          detail::originField(f, rank, "instructions", i), rank, knownKernel);
      if (it == bodies.end())
        bodies.insert(
            {key,
             {d, lazy->firstFrameBuffer(o.microBatch), lazy->postsBefore(i),
              d.op == "compute" ? findKernelSpec(d.kernel) : nullptr}});
      rank.instructions.push_back(std::move(d));
      continue;
    }
    Field in = detail::originField(f, rank, "instructions", i);
    if (hasCoordinates(in.value))
      sites.push_back(i);
    rank.instructions.push_back(parseResolved(in, mesh, r, rank, knownKernel));
  }
  return rank;
}

std::vector<InputDesc> parseIO(const Field &list) {
  std::vector<InputDesc> out;
  for (size_t i = 0; i < list.size(); ++i) {
    Field f = list.at(i);
    InputDesc d{f.at("name").string(), f.at("dtype").dtype(),
                f.at("shape").shape(), std::nullopt};
    if (f.has("index_bound"))
      d.indexBound = f.at("index_bound").nonNegative();
    out.push_back(d);
  }
  return out;
}

/// Every isend has exactly one irecv with its tag on its peer, from its
/// rank, of the same byte size, and every transfer is posted before it is
/// waited for; otherwise the ranks would hang.
} // namespace

namespace detail {

void parseNamedListsAt(const Field &f, const MeshShape &mesh, int64_t r,
                       RankPlan &rank) {
  json lists = json::object();
  for (const char *key :
       {"params", "state", "optimizer_state", "inputs", "outputs"})
    lists[key] = f.at(key).value;
  resolveNamedLists(lists, mesh, r, f.file, f.path);
  parseNamedLists(Field(lists, f.path, f.file), rank);
}

void placeRank(RankPlan &rank, const MeshShape &mesh, int64_t r,
               const std::string &path) {
  rank.rank = r;
  rank.path = path;
  rank.coords.clear();
  std::vector<int64_t> at = mesh.coords(r);
  for (size_t a = 0; a < mesh.axes.size(); ++a)
    rank.coords.push_back({mesh.axes[a].first, at[a]});
}

BufferDesc parseBuffer(const Field &b, size_t i, const RankPlan &rank) {
  BufferDesc d;
  d.id = b.at("id").nonNegative();
  if (d.id != static_cast<int64_t>(i))
    b.at("id").fail("buffer ids must be 0, 1, 2, ... in order");
  d.dtype = b.at("dtype").dtype();
  d.shape = b.at("shape").shape();
  d.bytes = b.at("bytes").nonNegative();
  d.offset = b.at("offset").nonNegative();
  d.kind = b.at("kind").string();
  static const char *kinds[] = {"input",           "param",    "state",
                                "optimizer_state", "constant", "activation"};
  if (std::find(std::begin(kinds), std::end(kinds), d.kind) == std::end(kinds))
    b.at("kind").fail("unknown buffer kind '" + d.kind + "'");
  // Saturating: a shape whose size overflows int64 matches no byte count
  // an arena can hold.
  int64_t size = TensorType{d.dtype, d.shape}.bytes();
  if (size != d.bytes || size == INT64_MAX)
    b.at("bytes").fail(std::to_string(d.bytes) + " bytes, but " +
                       shapeString(d.shape) + " " + dtypeName(d.dtype) +
                       " takes " + std::to_string(size));
  // Kernels access elements through typed pointers (the arena itself is
  // 64-byte aligned); weftc aligns every buffer to 64 bytes.
  if (d.offset % dtypeSize(d.dtype) != 0)
    b.at("offset").fail(std::to_string(d.offset) +
                        " is not a multiple of the " + dtypeName(d.dtype) +
                        " element size");
  if (d.offset > rank.arenaBytes || d.bytes > rank.arenaBytes - d.offset)
    b.at("offset").fail(
        std::to_string(d.offset) + " + " + std::to_string(d.bytes) +
        " bytes exceeds arena_bytes " + std::to_string(rank.arenaBytes));
  if (b.has("view_of")) {
    d.viewOf = b.at("view_of").nonNegative();
    if (d.viewOf >= d.id || rank.buffers[d.viewOf].offset != d.offset)
      b.at("view_of").fail("must name an earlier buffer at the same offset");
  }
  return d;
}

} // namespace detail

std::vector<int64_t> Plan::groupOf(const RankPlan &rank,
                                   const std::string &axis) const {
  const SubAxis *sub = nullptr;
  for (const SubAxis &s : subAxes)
    if (s.name == axis)
      sub = &s;
  std::vector<int64_t> key;
  for (const auto &[name, size] : meshAxes) {
    if (name == axis)
      key.push_back(-1);
    else if (sub && name == sub->of)
      key.push_back(rank.coord(name) - coord(rank, axis) * sub->stride);
    else
      key.push_back(rank.coord(name));
  }
  return key;
}

Plan parsePlan(const std::string &text, const std::string &path,
               const std::function<bool(const std::string &)> &knownKernel,
               int64_t onlyRank) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    throw Error(path + ": not valid JSON");
  Field f(root, "", path);
  if (f.at("format").string() != "weft-plan")
    f.at("format").fail("expected \"weft-plan\"");
  Plan plan;
  plan.path = path;
  plan.version = f.at("version").integer();
  if (plan.version != kPlanVersion)
    f.at("version").fail("version " + std::to_string(plan.version) +
                         " is not supported (this weft-run reads version " +
                         std::to_string(kPlanVersion) +
                         (plan.version < kPlanVersion
                              ? "; compile the model again with this "
                                "weftc"
                              : "") +
                         ")");
  plan.modelPath = f.at("model").at("path").string();
  plan.modelSha256 = f.at("model").at("sha256").string();
  Field axes = f.at("mesh").at("axes");
  for (size_t i = 0; i < axes.size(); ++i)
    plan.meshAxes.push_back(
        {axes.at(i).at("name").string(), axes.at(i).at("size").nonNegative()});
  if (f.at("mesh").has("sub_axes")) {
    Field subs = f.at("mesh").at("sub_axes");
    for (size_t i = 0; i < subs.size(); ++i)
      plan.subAxes.push_back({subs.at(i).at("name").string(),
                              subs.at(i).at("of").string(),
                              subs.at(i).at("size").nonNegative(),
                              subs.at(i).at("stride").nonNegative()});
  }
  plan.microBatches = f.at("micro_batches").nonNegative();
  plan.globalBatch = f.at("global_batch").nonNegative();
  plan.inputs = parseIO(f.at("inputs"));
  plan.outputs = parseIO(f.at("outputs"));
  // One program per role, each rank checking it as it sees it (PlanView.h):
  // with the rank's coordinate expressions evaluated.
  if (!f.has("programs") || f.at("programs").size() == 0)
    f.at("programs").fail("a plan needs at least one program");
  int64_t rankCount = f.at("rank_programs").size();
  const json &map = f.at("rank_programs").value;
  if (rankCount == 0)
    f.at("rank_programs").fail("a plan needs at least one rank");
  // The first rank of a program parses it, evaluating its coordinate
  // expressions where they stand; the others copy that and parse again only
  // what the expressions make differ (the named lists, the instructions
  // holding one): everything else is the same JSON, checked the same way.
  // No rank's view is built (at GPT-3 scale they would hold gigabytes).
  MeshShape mesh{plan.meshAxes, {}};
  for (const SubAxis &sub : plan.subAxes)
    mesh.subAxes.push_back({sub.name, sub.of, sub.size, sub.stride});
  std::map<const json *, int64_t> sharing; // program -> its ranks
  for (int64_t r = 0; r < rankCount; ++r)
    ++sharing[&programOf(root, r, path, mesh)];
  if (onlyRank >= 0 && onlyRank < rankCount &&
      loadableAlone(root, plan, mesh, onlyRank, path))
    plan.loadedRank = onlyRank;
  // Task-form programs are expanded lazily, once each (named as their
  // first rank names them): parseRank checks each body instruction once per
  // frame and copies it to the other instances, so every check below runs
  // on the explicit form without its JSON being written; messages name the
  // frame template or body instruction.
  std::map<const json *, std::shared_ptr<const TaskOrigins>> origins;
  for (int64_t r = 0; r < rankCount; ++r) {
    const json &program = programOf(root, r, path, mesh);
    if (!isTaskForm(program) || origins.count(&program))
      continue;
    int64_t k = map[r].get<int64_t>();
    auto where = std::make_shared<TaskOrigins>();
    json rest =
        expandTasksLazily(std::move(root["programs"][k]), path,
                          programPath(k, r, sharing[&program] > 1), *where);
    root["programs"][k] = std::move(rest); // the same node: keys stay
    origins[&program] = std::move(where);
  }
  SharedConstants shared(f);
  std::vector<Field> ranks;
  ranks.reserve(rankCount);
  std::map<const json *, int64_t> firstRank;         // program -> its rank
  std::map<const json *, std::vector<size_t>> sites; // its instructions
  // A one-rank load's other ranks: the first rank of each program, and
  // its transfers holding a coordinate.
  std::map<const json *, int64_t> transfers;
  std::map<const json *, std::vector<size_t>> transferSites;
  for (int64_t r = 0; r < rankCount; ++r) {
    const json &program = programOf(root, r, path, mesh);
    ranks.emplace_back(
        program, programPath(map[r].get<int64_t>(), r, sharing[&program] > 1),
        path);
    const Field &field = ranks.back();
    if (plan.loadedRank >= 0 && r != plan.loadedRank) {
      // The program's first such rank parses its transfers; the others
      // copy those and parse again the ones holding a coordinate.
      auto [first, added] = transfers.try_emplace(&program, r);
      if (added) {
        auto where = origins.find(&program);
        std::shared_ptr<const TaskOrigins> from =
            where == origins.end() ? nullptr : where->second;
        plan.ranks.push_back(parseTransfers(field, mesh, r, from,
                                            transferIndices(field, from.get()),
                                            transferSites[&program]));
        continue;
      }
      RankPlan rank = plan.ranks[first->second];
      placeRank(rank, mesh, r, field.path);
      detail::placeNamedListsAt(rank, field, mesh);
      detail::placeTransfersAt(rank, field, mesh, transferSites[&program]);
      plan.ranks.push_back(std::move(rank));
      continue;
    }
    auto first = firstRank.find(&program);
    if (first == firstRank.end()) {
      firstRank.emplace(&program, r);
      auto where = origins.find(&program);
      plan.ranks.push_back(
          parseRank(field, mesh, r, knownKernel,
                    where == origins.end() ? nullptr : where->second, shared,
                    sites[&program]));
      continue;
    }
    RankPlan rank = plan.ranks[first->second];
    placeRank(rank, mesh, r, field.path);
    detail::placeNamedListsAt(rank, field, mesh);
    for (size_t i : sites[&program])
      rank.instructions[i] =
          parseResolved(detail::originField(field, rank, "instructions", i),
                        mesh, r, rank, knownKernel);
    plan.ranks.push_back(std::move(rank));
  }
  detail::checkTransfers(plan, ranks);
  detail::checkMesh(plan, f, ranks);
  checkInstructionOrder(plan);
  return plan;
}

Plan loadPlan(const std::string &path,
              const std::function<bool(const std::string &)> &knownKernel,
              int64_t onlyRank) {
  return parsePlan(readFile(path, "the plan"), path, knownKernel, onlyRank);
}

std::string decodeBase64(const std::string &text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  if (text.size() % 4 != 0)
    throw Error("base64 length is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      v[k] = value(c);
      if (v[k] < 0 || pad)
        throw Error("malformed base64");
    }
    uint32_t word = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(static_cast<char>(word >> 16));
    if (pad < 2)
      out.push_back(static_cast<char>((word >> 8) & 0xff));
    if (pad < 1)
      out.push_back(static_cast<char>(word & 0xff));
  }
  return out;
}

} // namespace weft::rt
