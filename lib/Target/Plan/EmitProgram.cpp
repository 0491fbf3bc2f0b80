//===- EmitProgram.cpp - one stage function -> one plan program -----------===//
//
// The buffers and the instructions of a program (EmitProgram.h); which
// task instances repeat is RepeatedInstances.cpp.
//
//===----------------------------------------------------------------------===//

#include "EmitProgram.h"

#include "CheckInstruction.h"
#include "ConstantData.h"

#include "weft/Dialect/Weft/IR/KernelContract.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/runtime/PlanView.h"

using namespace mlir;
using json = nlohmann::json;
using namespace weft;

namespace {

const char *kindName(weft::BufferKind kind) {
  switch (kind) {
  case weft::BufferKind::Input:
    return "input";
  case weft::BufferKind::Param:
    return "param";
  case weft::BufferKind::State:
    return "state";
  case weft::BufferKind::OptimizerState:
    return "optimizer_state";
  case weft::BufferKind::Constant:
    return "constant";
  case weft::BufferKind::Activation:
    return "activation";
  }
  llvm_unreachable("unknown buffer kind");
}

/// The ONNX node a location names (see the importer), for traces and errors.
std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// Largest valid index for integer inputs that feed gather indices or loss
/// labels, so the synthetic data generator makes valid batches. A
/// vocab-parallel op's table holds 1/`vocabParts` of the vocabulary.
std::optional<int64_t> indexBound(Value value, int64_t vocabParts) {
  std::optional<int64_t> bound;
  auto tighten = [&](int64_t b) { bound = bound ? std::min(*bound, b) : b; };
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    // Micro-batch slices and reshapes pass the indices on unchanged.
    if (isa<weft::SliceOp, weft::ReshapeOp>(user))
      if (std::optional<int64_t> b = indexBound(user->getResult(0), vocabParts))
        tighten(*b);
    if (auto gather = dyn_cast<weft::VocabParallelGatherOp>(user);
        gather && use.getOperandNumber() == 1)
      tighten(gather.getTable().getType().getDimSize(0) * vocabParts);
    if (auto loss = dyn_cast<weft::VocabParallelCrossEntropyOp>(user);
        loss && use.getOperandNumber() == 3)
      tighten(loss.getScores().getType().getDimSize(1) * vocabParts);
    if (auto gather = dyn_cast<weft::GatherOp>(user);
        gather && use.getOperandNumber() == 1)
      tighten(gather.getData().getType().getDimSize(gather.getAxis()));
    // Both cross-entropy forms take (scores [N, C, d...], labels, ...).
    if (isa<weft::SoftmaxCrossEntropyOp, weft::SoftmaxCrossEntropyAndGradOp>(
            user) &&
        use.getOperandNumber() == 1)
      tighten(
          cast<RankedTensorType>(user->getOperand(0).getType()).getDimSize(1));
    if (auto loss = dyn_cast<weft::NllLossOp>(user);
        loss && use.getOperandNumber() == 1)
      tighten(loss.getInput().getType().getDimSize(1));
  }
  return bound;
}

/// The coordinate expression times * coord(axis) + plus (PlanView.h): what
/// the ranks sharing a program differ by, evaluated by each at load.
json coordExpr(StringRef axis, int64_t times = 1, int64_t plus = 0) {
  json e = {{"coord", axis.str()}};
  if (times != 1)
    e["times"] = times;
  if (plus != 0)
    e["plus"] = plus;
  return e;
}

/// `value` as the program's first rank (coordinate 0 on every axis) sees
/// it, in place: what weftc checks an instruction with.
void placeAtFirstRank(json &value) {
  if (value.is_object() && value.contains("coord")) {
    value = value.value("plus", int64_t(0));
    return;
  }
  if (value.is_structured())
    for (json &item : value)
      placeAtFirstRank(item);
}

/// A `weft.shard = {dim, blocks}` attribute: the plan's {dim, blocks,
/// index, count} over the tensor axis, index the rank's coordinate.
json tensorShard(DictionaryAttr split, const DeviceMesh &mesh) {
  auto field = [&](StringRef key) {
    return cast<IntegerAttr>(split.get(key)).getInt();
  };
  return {{"dim", field("dim")},
          {"blocks", field("blocks")},
          {"index", coordExpr("tensor")},
          {"count", mesh.sizeOf("tensor")}};
}

/// The micro-batch whose frame holds `v` (task bodies): every op defining
/// or reading it works on that micro-batch, and so does every op touching
/// its storage, unless `v` is a view of a program storage (a micro-batch's
/// reshape of a constant). Constants are the program's.
int64_t frameOf(Value v, const Storage &s, const MemoryPlan &memory) {
  auto result = dyn_cast<OpResult>(v);
  if (memory.slots.empty() || !result || isa<ConstantOp>(result.getOwner()))
    return -1;
  std::optional<int64_t> m = microBatchWorkedOn(result.getOwner());
  for (Operation *user : v.getUsers())
    if (!m || microBatchWorkedOn(user) != m)
      return -1;
  if (s.microBatch != m && (s.microBatch >= 0 || s.value == v))
    return -1;
  return m.value_or(-1);
}

} // namespace

ProgramEmitter::ProgramEmitter(func::FuncOp func, const MemoryPlan &memory,
                               int64_t stage, const DeviceMesh &mesh,
                               const std::optional<DeviceMesh> &zeroMesh,
                               std::map<int64_t, int64_t> &dropoutCount,
                               bool repeatInstances)
    : func(func), memory(memory), stage(stage), mesh(mesh), zeroMesh(zeroMesh),
      dropoutCount(dropoutCount), repeatInstances(repeatInstances) {}

LogicalResult ProgramEmitter::addBuffer(Value v) {
  if (!isa<RankedTensorType>(v.getType()))
    return success(); // a transfer request: no bytes
  auto type = cast<RankedTensorType>(v.getType());
  if (weft::dtypeName(type.getElementType()).empty())
    return emitError(v.getLoc()) << "a plan cannot hold " << type;
  unsigned storage = memory.storageOf.lookup(v);
  const Storage &s = memory.storages[storage];
  int64_t id = facts.size();
  auto [owner, first] = storageOwner.insert({storage, id});
  facts.push_back({type, s.offset, s.kind, first ? -1 : owner->second});
  bufferId[v] = id;
  BufferHome home{frameOf(v, s, memory), -1, s.offset};
  if (home.microBatch >= 0 && s.carried()) {
    home.slotGroup = s.slotGroup;
    home.slotZeroOffset = memory.slotZeroOffset(s);
  }
  section.homes.push_back(home);
  // The id bodies name it by: as writeTaskBodies numbers the buffers.
  int64_t root = owner->second;
  if (home.microBatch >= 0) {
    if (int64_t(frameSize.size()) <= home.microBatch)
      frameSize.resize(home.microBatch + 1, 0);
    bodyId.push_back(-(++frameSize[home.microBatch]));
    crossFrame |= section.homes[root].microBatch != home.microBatch &&
                  section.homes[root].microBatch >= 0;
  } else {
    auto [it, added] =
        programBufferOf.insert({{root, type}, int64_t(programBufferOf.size())});
    bodyId.push_back(it->second);
    crossFrame |= section.homes[root].microBatch >= 0;
  }
  return success();
}

json ProgramEmitter::bufferJson(int64_t id) const {
  const BufferFacts &f = facts[id];
  // Member by member: an initializer list copies every value once more.
  json b = json::object();
  b["id"] = id;
  b["dtype"] = weft::dtypeName(f.type.getElementType());
  b["shape"] = f.type.getShape().vec();
  b["bytes"] = byteSize(f.type);
  b["offset"] = f.offset;
  b["kind"] = kindName(f.kind);
  if (f.viewOf >= 0)
    b["view_of"] = f.viewOf;
  return b;
}

ops::OperandDesc ProgramEmitter::operandDesc(int64_t id) const {
  const BufferFacts &f = facts[id];
  return {weft::dtypeName(f.type.getElementType()), f.type.getShape().vec(),
          f.offset};
}

void ProgramEmitter::writeBuffers() {
  // A micro-batch's frame (TaskBodies.h) as writeTaskBodies writes it: its
  // buffers' types, slot offsets and groups, kinds and views. In the task
  // form a frame alike an earlier micro-batch's is that frame: its buffers
  // are not written.
  section.frameRepeats.assign(frameSize.size(), -1);
  if (repeating) {
    std::vector<std::vector<uintptr_t>> frameKeys(frameSize.size());
    for (auto [id, home] : llvm::enumerate(section.homes)) {
      if (home.microBatch < 0)
        continue;
      const BufferFacts &f = facts[id];
      std::vector<uintptr_t> &key = frameKeys[home.microBatch];
      key.push_back(reinterpret_cast<uintptr_t>(f.type.getAsOpaquePointer()));
      key.push_back(home.slotZeroOffset);
      key.push_back(home.slotGroup);
      key.push_back(static_cast<uintptr_t>(f.kind));
      key.push_back(f.viewOf < 0 ? INT64_MIN : bodyId[f.viewOf]);
    }
    std::map<std::vector<uintptr_t>, int64_t> firstWithFrame;
    for (auto [m, key] : llvm::enumerate(frameKeys))
      if (auto [it, added] = firstWithFrame.try_emplace(std::move(key), m);
          !added)
        section.frameRepeats[m] = it->second;
  }
  for (auto [id, home] : llvm::enumerate(section.homes))
    buffers.push_back(home.microBatch >= 0 &&
                              section.frameRepeats[home.microBatch] >= 0
                          ? json()
                          : bufferJson(id));
}

LogicalResult ProgramEmitter::addArguments() {
  // ZeRO's groups smaller than the data axis run on the zero mesh, whose
  // axes are the plan's sub-axes of `data` (the same rank order); ZeRO's
  // pieces are over its data_shard axis, else over data.
  const DeviceMesh &pieceMesh = zeroMesh ? *zeroMesh : mesh;
  StringRef pieceAxis = zeroMesh ? StringRef(kDataShardAxis) : "data";
  section.inputs = json::array();
  section.outputs = json::array();
  for (BlockArgument arg : func.getArguments()) {
    if (failed(addBuffer(arg)))
      return failure();
    int64_t id = bufferId[arg];
    unsigned i = arg.getArgNumber();
    // ZeRO's piece of the argument's whole tensor, over the data axis.
    auto withPiece = [&](json entry) {
      if (auto shape =
              func.getArgAttrOfType<DenseI64ArrayAttr>(i, kFlatShardAttr))
        entry["flat_shard"] = {{"shape", shape.asArrayRef().vec()},
                               {"index", coordExpr(pieceAxis)},
                               {"count", pieceMesh.sizeOf(pieceAxis)}};
      return entry;
    };
    // The tensor-parallel slice of a parameter (and of its optimizer
    // state) this rank holds, or null.
    json shard = nullptr;
    if (auto split = func.getArgAttrOfType<DictionaryAttr>(i, kShardAttr))
      shard = tensorShard(split, mesh);
    if (auto name = func.getArgAttrOfType<StringAttr>(i, kParamAttr)) {
      params.push_back(
          withPiece({{"name", name.str()}, {"buffer", id}, {"shard", shard}}));
    } else if (auto name = func.getArgAttrOfType<StringAttr>(i, kStateAttr)) {
      state.push_back({{"name", name.str()}, {"buffer", id}});
    } else if (auto name =
                   func.getArgAttrOfType<StringAttr>(i, kOptimizerStateAttr)) {
      json entry = {{"name", name.str()}, {"buffer", id}, {"shard", shard}};
      // A master copy starts as its parameter's initializer, exactly.
      if (auto of = func.getArgAttrOfType<StringAttr>(i, kMasterOfAttr))
        entry["init"] = of.str();
      // The loss scaler starts at GradScaler's (2^16, 0, 0).
      if (func.getArgAttr(i, kLossScalerAttr))
        entry["fill"] = json::array({kInitialLossScale, 0.0, 0.0});
      optimizerState.push_back(withPiece(std::move(entry)));
    } else {
      auto inputName = func.getArgAttrOfType<StringAttr>(i, kInputAttr);
      std::string inName =
          inputName ? inputName.str() : "arg" + std::to_string(i);
      auto type = cast<RankedTensorType>(arg.getType());
      // Data parallelism: the plan's input is the global batch; the rank
      // reads its replica's contiguous rows (dim 0 as [1, D, rows]).
      std::vector<int64_t> shape = type.getShape().vec();
      json shard = nullptr;
      if (int64_t d = mesh.sizeOf("data"); d > 1) {
        shape[0] *= d;
        shard = {{"dim", 0},
                 {"blocks", 1},
                 {"index", coordExpr("data")},
                 {"count", d}};
      }
      json input = {{"name", inName},
                    {"dtype", weft::dtypeName(type.getElementType())},
                    {"shape", shape}};
      if (std::optional<int64_t> bound = indexBound(arg, mesh.sizeOf("tensor")))
        input["index_bound"] = *bound;
      section.inputs.push_back(input);
      rankInputs.push_back({{"name", inName}, {"buffer", id}});
      if (!shard.is_null())
        rankInputs.back()["shard"] = shard;
    }
  }

  return success();
}

LogicalResult ProgramEmitter::numberCollectivesAndMasks() {
  int64_t collectives = 0;
  for (Operation &op : func.getBody().front().without_terminator()) {
    // Collectives: numbered in program order (the order the group's
    // members post them); a wait names its collective's number.
    if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp>(op))
      collectiveTag[&op] = collectives++;
    if (auto wait = dyn_cast<WaitCollectiveOp>(op);
        wait && !collectiveTag.count(wait.getPosted().getDefiningOp()))
      return op.emitError("plan emission: a wait_collective must wait for "
                          "a collective posted before it");
    // Dropout masks are keyed by (rng_id, micro-batch, step), rng_id
    // counting the micro-batch's dropout ops in forward order, not the
    // instruction index: a recomputed forward draws the same mask, and so
    // does a pipelined plan (stages hold contiguous pieces of the forward,
    // emitted in stage order). weft-checkpoint numbers dropouts before
    // cloning them (a recomputed dropout keeps its original's id);
    // otherwise they are counted here.
    if (drawsDropoutMask(&op) && !op.hasAttr(kRngIdAttr))
      rngIds[&op] = dropoutCount[microBatchWorkedOn(&op).value_or(0)]++;
  }
  return success();
}

FailureOr<json> ProgramEmitter::instruction(Operation &op) {
  // Ranks are row-major with the pipeline axis outermost: the rank at
  // stage s with this rank's other coordinates is s * replicas + replica.
  int64_t replicas = mesh.size() / mesh.sizeOf("pipeline");
  auto peerRank = [&](int64_t peerStage) {
    return coordExpr("replica", 1, peerStage * replicas);
  };
  // Tags are unique per step within the plan: the function's tag for each
  // replica, interleaved.
  auto planTag = [&](int64_t tag) {
    return coordExpr("replica", 1, tag * replicas);
  };
  auto gridOf = [&](Operation *op) -> const DeviceMesh & {
    return zeroMesh && onZeroMesh(op) ? *zeroMesh : mesh;
  };
  json inst = json::object();
  inst["op"] = "compute";
  inst["name"] = nodeName(op.getLoc());
  json &in = inst["inputs"] = json::array();
  json &out = inst["outputs"] = json::array();
  for (Value v : op.getOperands())
    if (auto it = bufferId.find(v); it != bufferId.end())
      in.push_back(it->second);
  for (Value v : op.getResults())
    if (auto it = bufferId.find(v); it != bufferId.end())
      out.push_back(it->second);
  // Transfers: the peer stage's rank with this rank's other coordinates.
  if (auto send = dyn_cast<ISendOp>(op)) {
    inst["op"] = "isend";
    inst["peer"] = peerRank(send.getPeer());
    inst["tag"] = planTag(send.getTag());
  } else if (auto recv = dyn_cast<IRecvOp>(op)) {
    inst["op"] = "irecv";
    inst["peer"] = peerRank(recv.getPeer());
    inst["tag"] = planTag(recv.getTag());
  } else if (auto wait = dyn_cast<WaitSendOp>(op)) {
    inst["op"] = "wait_send";
    inst["tag"] = planTag(wait.getRequest().getDefiningOp<ISendOp>().getTag());
  } else if (auto wait = dyn_cast<WaitRecvOp>(op)) {
    inst["op"] = "wait_recv";
    inst["tag"] = planTag(wait.getRequest().getDefiningOp<IRecvOp>().getTag());
  } else if (auto sum = dyn_cast<shard::AllReduceOp>(op)) {
    // Collectives: the group is the ranks that differ only along `axis`;
    // each runs the group's collectives in one order, numbered by `tag`.
    bool max = sum.getReduction() == shard::ReductionKind::Max;
    if (sum.getGridAxes().size() != 1 ||
        (!max && sum.getReduction() != shard::ReductionKind::Sum))
      return op.emitError("plan emission: an all-reduce must sum or take "
                          "the maximum over one mesh axis");
    inst["op"] = "all_reduce";
    inst["axis"] = gridOf(&op).axes[sum.getGridAxes()[0]];
    inst["tag"] = collectiveTag.lookup(&op);
    inst["reduction"] = max ? "max" : "sum";
  } else if (isa<shard::AllGatherOp, shard::ReduceScatterOp>(op)) {
    // Sequence parallelism: the group's parts along tensor dimension
    // `dim` (rank t's the t-th), concatenated or summed and split.
    auto gather = dyn_cast<shard::AllGatherOp>(op);
    auto scatter = dyn_cast<shard::ReduceScatterOp>(op);
    ArrayRef<shard::GridAxis> axes =
        gather ? gather.getGridAxes() : scatter.getGridAxes();
    if (axes.size() != 1 ||
        (scatter && scatter.getReduction() != shard::ReductionKind::Sum))
      return op.emitError("plan emission: an all-gather or reduce-scatter "
                          "must run over one mesh axis (and sum)");
    inst["op"] = gather ? "all_gather" : "reduce_scatter";
    inst["axis"] = gridOf(&op).axes[axes[0]];
    inst["tag"] = collectiveTag.lookup(&op);
    inst["dim"] = gather ? gather.getGatherAxis().getSExtValue()
                         : scatter.getScatterAxis().getSExtValue();
  } else if (auto wait = dyn_cast<WaitCollectiveOp>(op)) {
    inst["op"] = "wait_collective";
    inst["tag"] = collectiveTag.lookup(wait.getPosted().getDefiningOp());
  } else if (auto slice = dyn_cast<shard::AllSliceOp>(op)) {
    // No communication: the rank's part, as a slice kernel.
    if (slice.getGridAxes().size() != 1)
      return op.emitError("plan emission: an all-slice must run over one "
                          "mesh axis");
    auto whole = slice.getInput().getType().getShape();
    int64_t dim = slice.getSliceAxis().getSExtValue();
    int64_t width = slice.getType().getDimSize(dim);
    std::vector<int64_t> starts(whole.size(), 0),
        ends(whole.begin(), whole.end()), steps(whole.size(), 1);
    StringRef axis = gridOf(&op).axes[slice.getGridAxes()[0]];
    json startsJson = starts, endsJson = ends;
    startsJson[dim] = coordExpr(axis, width);
    endsJson[dim] = coordExpr(axis, width, width);
    inst["kernel"] = "slice";
    inst["attrs"] = {
        {"starts", startsJson}, {"ends", endsJson}, {"steps", steps}};
  } else {
    std::string unencodable;
    std::optional<json> attrsOrNone = kernelAttributes(op, &unencodable);
    if (!attrsOrNone)
      return op.emitError("plan emission cannot encode attribute ")
             << unencodable;
    json attrs = std::move(*attrsOrNone);
    // An attention's gradient redraws its forward's bits: the forward's
    // rng_id and shard.
    Operation *drawer = &op;
    if (auto grad = dyn_cast<AttentionGradOp>(op))
      drawer = grad.getStats().getDefiningOp<AttentionOp>();
    if (!drawer)
      return op.emitError("plan emission: an attention_grad's stats must "
                          "come from a weft.attention");
    if (drawsDropoutMask(drawer)) {
      // (numberCollectivesAndMasks numbered those without an rng_id.)
      if (auto id = drawer->getAttrOfType<IntegerAttr>(kRngIdAttr))
        attrs["rng_id"] = id.getInt();
      else if (drawer == &op || drawer->isBeforeInBlock(&op))
        attrs["rng_id"] = rngIds.lookup(drawer);
      else
        return op.emitError("plan emission: an attention_grad before its "
                            "forward");
      // A tensor-parallel shard draws its part of the whole mask.
      if (auto split = drawer->getAttrOfType<DictionaryAttr>(kShardAttr)) {
        json shard = tensorShard(split, mesh);
        for (auto &[key, value] : shard.items())
          attrs["shard_" + key] = value;
      }
    }
    // Vocab parallelism: the first row (class) this rank holds.
    if (int64_t rows = vocabShardRows(op); rows >= 0) {
      auto axes = op.getAttrOfType<DenseI16ArrayAttr>("grid_axes");
      if (!axes || axes.size() != 1)
        return op.emitError("plan emission: a vocab-parallel op must be "
                            "sharded over one mesh axis");
      attrs["start"] = coordExpr(mesh.axes[axes[0]], rows);
    }
    inst["kernel"] = op.getName().stripDialect().str();
    inst["attrs"] = std::move(attrs);
  }
  return inst;
}

LogicalResult ProgramEmitter::writeInstruction(Operation &op) {
  FailureOr<json> built = instruction(op);
  if (failed(built))
    return failure();
  json &inst = *built;
  if (failed(checkCompute(op, inst)))
    return failure();
  bool unwaited = waitsAtOnce(&op);
  json waited =
      unwaited ? json::array({inst["outputs"][0], inst["inputs"][0]}) : json();
  instructions.push_back(std::move(inst));
  if (unwaited)
    instructions.push_back({{"op", "wait_collective"},
                            {"name", nodeName(op.getLoc())},
                            {"inputs", std::move(waited)},
                            {"outputs", json::array()},
                            {"tag", collectiveTag.lookup(&op)}});
  return success();
}

bool ProgramEmitter::waitsAtOnce(Operation *op) const {
  return collectiveTag.count(op) && !isWaitedFor(op);
}

LogicalResult ProgramEmitter::checkCompute(Operation &op, const json &inst) {
  if (inst["op"] != "compute")
    return success();
  // Copied only to place a coordinate expression.
  std::optional<json> placed;
  if (rt::hasCoordinates(inst))
    placeAtFirstRank(placed.emplace(inst));
  return checkInstruction(op, placed ? *placed : inst,
                          [&](int64_t id) { return operandDesc(id); });
}

LogicalResult ProgramEmitter::checkRepeat(Operation &op, size_t written) {
  const json &inst = instructions[written];
  if (inst["op"] != "compute")
    return success();
  // The check reads the operands' dtypes, shapes and offsets; the repeat's
  // instruction is the written one's, its dtypes and shapes are too.
  // Keyed by the instruction and its operands' offsets, as weft-run's
  // loader keys its check of a body instruction's instances.
  std::string placement;
  auto add = [&](int64_t word) {
    placement.append(reinterpret_cast<const char *>(&word), sizeof(word));
  };
  add(written);
  json repeat = inst;
  for (auto [key, values] :
       {std::pair{"inputs", ValueRange(op.getOperands())},
        std::pair{"outputs", ValueRange(op.getResults())}}) {
    json &ids = repeat[key] = json::array();
    for (Value v : values)
      if (auto it = bufferId.find(v); it != bufferId.end()) {
        ids.push_back(it->second);
        add(facts[it->second].offset);
      }
  }
  if (!checkedPlacements.insert(std::move(placement)).second)
    return success();
  return checkCompute(op, repeat);
}

void ProgramEmitter::addOutputs() {
  auto results = func.getBody().front().getTerminator()->getOperands();
  for (auto [i, v] : llvm::enumerate(results)) {
    // Updates are written in place (their buffers alias the parameter's and
    // the optimizer state's): they are not outputs.
    if (func.getResultAttr(i, kUpdateAttr))
      continue;
    // Gradients are named after their parameter: "<param>.grad".
    auto attr = func.getResultAttrOfType<StringAttr>(i, "weft.output");
    auto grad = func.getResultAttrOfType<StringAttr>(i, kGradAttr);
    std::string name = attr   ? attr.str()
                       : grad ? grad.str() + ".grad"
                              : "out" + std::to_string(i);
    section.outputs.push_back(
        {{"name", name},
         {"dtype", weft::dtypeName(
                       cast<RankedTensorType>(v.getType()).getElementType())},
         {"shape", cast<RankedTensorType>(v.getType()).getShape().vec()}});
    rankOutputs.push_back({{"name", name}, {"buffer", bufferId[v]}});
  }
}

FailureOr<ProgramSection> ProgramEmitter::emit() {
  if (failed(addArguments()))
    return failure();
  for (Operation &op : func.getBody().front().without_terminator()) {
    for (Value result : op.getResults())
      if (failed(addBuffer(result)))
        return failure();
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!value)
        return op.emitError("plan emission needs dense constants");
      // A micro-batch's constants are each micro-batch's (one attribute):
      // encoded (and hashed) once.
      auto [known, added] = constantData.try_emplace(value, json());
      if (added)
        known->second =
            constantEntry(/*buffer=*/0, value, section.sharedConstants);
      json entry = known->second;
      entry["buffer"] = bufferId[constant.getResult()];
      constants.push_back(std::move(entry));
    }
  }
  if (failed(numberCollectivesAndMasks()) || failed(writeInstances()))
    return failure();
  writeBuffers();
  addOutputs();
  // Moved in: an initializer list would copy every buffer and instruction.
  json &program = section.program = json::object();
  program["stage"] = stage;
  program["arena_bytes"] = memory.arenaBytes;
  program["buffers"] = std::move(buffers);
  program["params"] = std::move(params);
  program["state"] = std::move(state);
  program["optimizer_state"] = std::move(optimizerState);
  program["inputs"] = std::move(rankInputs);
  program["outputs"] = std::move(rankOutputs);
  program["constants"] = std::move(constants);
  program["instructions"] = std::move(instructions);
  return std::move(section);
}
