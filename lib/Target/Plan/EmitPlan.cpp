//===- EmitPlan.cpp - weft IR -> execution plan (JSON) --------------------===//

#include "weft/Target/Plan/EmitPlan.h"

#include "CheckInstruction.h"
#include "ConstantData.h"
#include "TaskBodies.h"

#include "weft/Analysis/MemoryPlan.h"
#include "weft/Analysis/PipelineSimulation.h"
#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/KernelContract.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/runtime/PlanView.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SHA256.h"

#include <map>
#include <set>

using namespace mlir;
using json = nlohmann::json;
using namespace weft;

std::string weft::sha256File(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return "";
  auto digest =
      llvm::SHA256::hash(llvm::arrayRefFromStringRef((*buffer)->getBuffer()));
  return llvm::toHex(digest, /*LowerCase=*/true);
}

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

} // namespace

std::string weft::jsonText(const json &value) { return rt::compactJson(value); }

void weft::printPlan(const json &plan, llvm::raw_ostream &os) {
  os << rt::printPlanText(plan);
}

namespace {

/// A stage's program, plus what it contributes to the global input and
/// output lists.
struct ProgramSection {
  json program, inputs, outputs;
  int64_t microBatches = 1;
  std::string text; ///< the program printed, once `program` is dropped
  std::vector<BufferHome> homes; ///< by buffer id
  std::vector<InstructionTask> tasks; ///< by instruction
  /// Its constants written once per plan: base64 by SHA-256 (hex).
  std::map<std::string, std::string> sharedConstants;
};

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

/// The program of `func`, run by every rank of its pipeline stage (tensor
/// and data parallel replicas of it); `memory` is its memory plan.
FailureOr<ProgramSection>
emitProgram(func::FuncOp func, const MemoryPlan &memory, int64_t stage,
            const DeviceMesh &mesh, const std::optional<DeviceMesh> &zeroMesh,
            std::map<int64_t, int64_t> &dropoutCount) {
  // The rng_id plan emission gave each mask-drawing op without one.
  llvm::DenseMap<Operation *, int64_t> rngIds;
  // ZeRO's groups smaller than the data axis run on the zero mesh, whose
  // axes are the plan's sub-axes of `data` (the same rank order); ZeRO's
  // pieces are over its data_shard axis, else over data.
  const DeviceMesh &pieceMesh = zeroMesh ? *zeroMesh : mesh;
  StringRef pieceAxis = zeroMesh ? StringRef(kDataShardAxis) : "data";
  auto gridOf = [&](Operation *op) -> const DeviceMesh & {
    return zeroMesh && onZeroMesh(op) ? *zeroMesh : mesh;
  };
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
  // Collectives: numbered in program order (the order the group's members
  // post them); a wait names its collective's number.
  int64_t collectives = 0;
  llvm::DenseMap<Operation *, int64_t> collectiveTag;

  // Buffer ids: one per value, in definition order; views point at the
  // buffer whose bytes they share.
  llvm::DenseMap<Value, int64_t> bufferId;
  llvm::DenseMap<unsigned, int64_t> storageOwner;
  json buffers = json::array();
  ProgramSection section;
  // The micro-batch whose frame holds `v` (task bodies): every op defining
  // or reading it works on that micro-batch, and so does every op touching
  // its storage, unless `v` is a view of a program storage (a micro-batch's
  // reshape of a constant). Constants are the program's.
  auto frameOf = [&](Value v, const Storage &s) -> int64_t {
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
  };
  auto addBuffer = [&](Value v) -> LogicalResult {
    if (!isa<RankedTensorType>(v.getType()))
      return success(); // a transfer request: no bytes
    auto type = cast<RankedTensorType>(v.getType());
    std::string dtype = weft::dtypeName(type.getElementType());
    if (dtype.empty())
      return emitError(v.getLoc()) << "a plan cannot hold " << type;
    unsigned storage = memory.storageOf.lookup(v);
    const Storage &s = memory.storages[storage];
    int64_t id = buffers.size();
    // Member by member: an initializer list copies every value once more.
    json b = json::object();
    b["id"] = id;
    b["dtype"] = std::move(dtype);
    b["shape"] = type.getShape().vec();
    b["bytes"] = byteSize(type);
    b["offset"] = s.offset;
    b["kind"] = kindName(s.kind);
    auto [owner, first] = storageOwner.insert({storage, id});
    if (!first)
      b["view_of"] = owner->second;
    bufferId[v] = id;
    buffers.push_back(std::move(b));
    BufferHome home{frameOf(v, s), -1, s.offset};
    if (home.microBatch >= 0 && s.carried()) {
      home.slotGroup = s.slotGroup;
      home.slotZeroOffset = memory.slotZeroOffset(s);
    }
    section.homes.push_back(home);
    return success();
  };
  section.inputs = json::array();
  section.outputs = json::array();
  json params = json::array(), state = json::array(),
       optimizerState = json::array(), rankInputs = json::array();
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
      json input = {
          {"name", inName}, {"dtype", buffers[id]["dtype"]}, {"shape", shape}};
      if (std::optional<int64_t> bound = indexBound(arg, mesh.sizeOf("tensor")))
        input["index_bound"] = *bound;
      section.inputs.push_back(input);
      rankInputs.push_back({{"name", inName}, {"buffer", id}});
      if (!shard.is_null())
        rankInputs.back()["shard"] = shard;
    }
  }

  json constants = json::array(), instructions = json::array();
  for (Operation &op : func.getBody().front().without_terminator()) {
    for (Value result : op.getResults())
      if (failed(addBuffer(result)))
        return failure();
    if (auto constant = dyn_cast<ConstantOp>(op)) {
      auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!value)
        return op.emitError("plan emission needs dense constants");
      constants.push_back(constantEntry(bufferId[constant.getResult()], value,
                                        section.sharedConstants));
      continue;
    }
    if (isView(&op))
      continue; // a view: no work, its buffer aliases the operand's bytes
    std::string phase = phaseOf(&op).str();
    int64_t microBatch = microBatchWorkedOn(&op).value_or(0);
    section.microBatches = std::max(section.microBatches, microBatch + 1);
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
      inst["tag"] =
          planTag(wait.getRequest().getDefiningOp<ISendOp>().getTag());
    } else if (auto wait = dyn_cast<WaitRecvOp>(op)) {
      inst["op"] = "wait_recv";
      inst["tag"] =
          planTag(wait.getRequest().getDefiningOp<IRecvOp>().getTag());
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
      inst["tag"] = collectiveTag[&op] = collectives++;
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
      inst["tag"] = collectiveTag[&op] = collectives++;
      inst["dim"] = gather ? gather.getGatherAxis().getSExtValue()
                           : scatter.getScatterAxis().getSExtValue();
    } else if (auto wait = dyn_cast<WaitCollectiveOp>(op)) {
      auto it = collectiveTag.find(wait.getPosted().getDefiningOp());
      if (it == collectiveTag.end())
        return op.emitError("plan emission: a wait_collective must wait for "
                            "a collective posted before it");
      inst["op"] = "wait_collective";
      inst["tag"] = it->second;
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
      // Dropout masks are keyed by (rng_id, micro-batch, step), rng_id
      // counting the micro-batch's dropout ops in forward order, not the
      // instruction index: a recomputed forward draws the same mask, and so
      // does a pipelined plan (stages hold contiguous pieces of the forward,
      // emitted in stage order).
      // An attention's gradient redraws its forward's bits: the forward's
      // rng_id and shard.
      Operation *drawer = &op;
      if (auto grad = dyn_cast<AttentionGradOp>(op))
        drawer = grad.getStats().getDefiningOp<AttentionOp>();
      if (!drawer)
        return op.emitError("plan emission: an attention_grad's stats must "
                            "come from a weft.attention");
      if (drawsDropoutMask(drawer)) {
        // weft-checkpoint numbers dropouts before cloning them (a
        // recomputed dropout keeps its original's id); otherwise count
        // here.
        if (auto id = drawer->getAttrOfType<IntegerAttr>(kRngIdAttr))
          attrs["rng_id"] = id.getInt();
        else if (drawer == &op)
          attrs["rng_id"] = rngIds[&op] = dropoutCount[microBatch]++;
        else if (rngIds.count(drawer))
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
    if (inst["op"] == "compute") {
      // Copied only to place a coordinate expression.
      std::optional<json> placed;
      if (rt::hasCoordinates(inst))
        placeAtFirstRank(placed.emplace(inst));
      if (failed(checkInstruction(op, placed ? *placed : inst, buffers)))
        return failure();
    }
    // A collective nothing waits for (weft-overlap-collectives did not run)
    // completes at once.
    bool unwaited = collectiveTag.count(&op) && !isWaitedFor(&op);
    json waited = unwaited ? json::array({out[0], in[0]}) : json();
    instructions.push_back(std::move(inst));
    section.tasks.push_back({phase, microBatch});
    if (unwaited) {
      instructions.push_back({{"op", "wait_collective"},
                              {"name", nodeName(op.getLoc())},
                              {"inputs", std::move(waited)},
                              {"outputs", json::array()},
                              {"tag", collectiveTag.lookup(&op)}});
      section.tasks.push_back({phase, microBatch});
    }
  }

  json rankOutputs = json::array();
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
         {"dtype", buffers[bufferId[v]]["dtype"]},
         {"shape", cast<RankedTensorType>(v.getType()).getShape().vec()}});
    rankOutputs.push_back({{"name", name}, {"buffer", bufferId[v]}});
  }

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
  return section;
}

} // namespace

FailureOr<weft::PlanParts> weft::emitPlanParts(ModuleOp module,
                                               const PlanSource &source,
                                               MemoryPlans *memory,
                                               const PlanOptions &options) {
  MemoryPlans own;
  MemoryPlans &plans = memory ? *memory : own;
  // A pipelined module has one function per stage (weft-schedule); any
  // other, one @main.
  SmallVector<func::FuncOp> funcs = rankFunctions(module);
  if (funcs.empty())
    return module.emitError("plan emission needs a func.func @main or "
                            "stage functions (weft-schedule)");
  std::string schedule = "none";
  if (auto name = funcs.front()->getAttrOfType<StringAttr>("weft.schedule"))
    schedule = name.str();
  // The ranks are the mesh's devices (weft-create-device-mesh); a module
  // without one (hand-written IR) runs its stage functions on a pipeline.
  FailureOr<std::optional<DeviceMesh>> found = getDeviceMesh(module);
  FailureOr<std::optional<DeviceMesh>> zeroMesh =
      getDeviceMesh(module, kZeroMeshSymbol);
  if (failed(found) || failed(zeroMesh))
    return failure();
  DeviceMesh mesh =
      found->value_or(DeviceMesh::standard(int64_t(funcs.size()), 1, 1));
  if (!llvm::is_contained(mesh.axes, "pipeline") ||
      mesh.sizeOf("pipeline") != int64_t(funcs.size()))
    return module.emitError("plan emission: the device mesh has ")
           << mesh.sizeOf("pipeline") << " pipeline stage(s); the module "
           << "has " << funcs.size() << " stage function(s)";

  // Peers and tags are written as functions of the rank's index among its
  // stage's (PlanView.h's `replica`): the pipeline axis must be outermost,
  // as weft-create-device-mesh makes it.
  if (mesh.axisIndex("pipeline") != 0)
    return module.emitError("plan emission: the device mesh's first axis "
                            "must be pipeline (ranks are row-major with "
                            "the stage outermost)");
  json inputs = json::array(), outputs = json::array();
  std::set<std::string> seenInputs, seenOutputs;
  int64_t microBatches = 1;
  llvm::DenseMap<int64_t, func::FuncOp> byStage;
  for (func::FuncOp func : funcs)
    byStage[stageOf(func).value_or(0)] = func;
  int64_t stages = mesh.sizeOf("pipeline");
  SmallVector<func::FuncOp> ordered;
  for (int64_t stage = 0; stage < stages; ++stage) {
    ordered.push_back(byStage.lookup(stage));
    if (!ordered.back())
      return module.emitError("plan emission: no function for stage ") << stage;
  }
  // Dropout rng_ids count a micro-batch's dropouts in forward order across
  // the stages: each stage starts from the counts of the stages before it
  // (the dropouts plan emission numbers: those without an rng_id yet).
  std::vector<std::map<int64_t, int64_t>> dropoutsBefore(stages);
  for (int64_t stage = 1; stage < stages; ++stage) {
    dropoutsBefore[stage] = dropoutsBefore[stage - 1];
    for (Operation &op : ordered[stage - 1].getBody().front())
      if (drawsDropoutMask(&op) && !op.hasAttr(kRngIdAttr))
        ++dropoutsBefore[stage][microBatchOf(&op).value_or(0)];
  }
  // One program per stage, run by each rank at that pipeline coordinate
  // (its tensor- and data-parallel replicas); the stages are emitted in
  // parallel, each reading only its own function.
  // (Memory plans made first, in parallel too: the threads only read them.)
  plans.planAll(ordered);
  SmallVector<const MemoryPlan *> memoryOf;
  for (func::FuncOp func : ordered)
    memoryOf.push_back(&plans.of(func));
  std::vector<std::optional<ProgramSection>> sections(stages);
  mlir::parallelFor(module.getContext(), 0, stages, [&](size_t stage) {
    FailureOr<ProgramSection> section =
        emitProgram(ordered[stage], *memoryOf[stage], stage, mesh, *zeroMesh,
                    dropoutsBefore[stage]);
    if (failed(section))
      return;
    if (!options.taskBodies ||
        !writeTaskBodies(section->program, section->tasks, section->homes,
                         memoryOf[stage]->slots))
      addTaskFields(section->program, section->tasks);
    // Printed at once: a GPT-3 plan's programs as JSON values take ten
    // times their text.
    section->text = rt::printProgramText(section->program);
    section->program = json();
    sections[stage] = std::move(*section);
  });
  PlanParts parts;
  json constantData = json::object();
  for (std::optional<ProgramSection> &section : sections) {
    if (!section)
      return failure();
    for (auto &[key, data] : section->sharedConstants)
      constantData[key] = std::move(data);
    microBatches = std::max(microBatches, section->microBatches);
    // Every rank reads the inputs it uses; list each input once.
    for (const json &in : section->inputs)
      if (seenInputs.insert(in["name"].get<std::string>()).second)
        inputs.push_back(in);
    for (const json &out : section->outputs)
      if (seenOutputs.insert(out["name"].get<std::string>()).second)
        outputs.push_back(out);
    parts.programs.push_back(std::move(section->text));
  }
  int64_t pipelineAxis = mesh.axisIndex("pipeline");
  json rankPrograms = json::array();
  for (int64_t index = 0; index < mesh.size(); ++index)
    rankPrograms.push_back(mesh.coords(index)[pipelineAxis]);
  int64_t batch = 1;
  if (!inputs.empty() && !inputs[0]["shape"].empty())
    batch = inputs[0]["shape"][0];
  json axes = json::array();
  for (auto [axis, size] : llvm::zip(mesh.axes, mesh.sizes))
    axes.push_back({{"name", axis}, {"size", size}});
  json meshJson = {{"axes", axes}};
  // ZeRO's groups: data coordinate d is data_replica d / S, data_shard
  // d % S (a sub-axis' coordinate is (d / stride) % size).
  if (*zeroMesh) {
    int64_t shard = (*zeroMesh)->sizeOf(kDataShardAxis);
    meshJson["sub_axes"] = {{{"name", kDataReplicaAxis.str()},
                             {"of", "data"},
                             {"size", (*zeroMesh)->sizeOf(kDataReplicaAxis)},
                             {"stride", shard}},
                            {{"name", kDataShardAxis.str()},
                             {"of", "data"},
                             {"size", shard},
                             {"stride", 1}}};
  }
  parts.plan =
      json{{"format", "weft-plan"},
           {"version", rt::kPlanVersion},
           {"model", {{"path", source.path}, {"sha256", source.sha256}}},
           {"mesh", meshJson},
           {"schedule", schedule},
           {"micro_batches", microBatches},
           {"global_batch", batch},
           {"inputs", inputs},
           {"outputs", outputs},
           {"constant_data", std::move(constantData)},
           {"programs", json::array()},
           {"rank_programs", rankPrograms}};
  return parts;
}

FailureOr<json> weft::emitPlan(ModuleOp module, const PlanSource &source,
                               MemoryPlans *memory) {
  FailureOr<PlanParts> parts = emitPlanParts(module, source, memory);
  if (failed(parts))
    return failure();
  return planJson(*parts);
}

json weft::planJson(const PlanParts &parts) {
  json plan = parts.plan;
  for (const std::string &text : parts.programs)
    plan["programs"].push_back(json::parse(text));
  return plan;
}

void weft::printPlan(PlanParts &&parts, llvm::raw_ostream &os) {
  // The plan printed around one marker program, then each program written
  // where the marker stands and released: the text is never copied whole
  // (JSON escapes every control character, so \x01 is nowhere else).
  assert(!parts.programs.empty() && "a plan has at least one program");
  std::vector<std::string> marker{"\x01"};
  std::string frame = rt::printPlanText(parts.plan, &marker);
  size_t at = frame.find('\x01');
  os << StringRef(frame).take_front(at);
  for (size_t k = 0; k < parts.programs.size(); ++k) {
    if (k)
      os << ",\n  ";
    os << parts.programs[k];
    std::string().swap(parts.programs[k]);
  }
  os << StringRef(frame).drop_front(at + 1);
}
