//===- EmitPlan.cpp - weft IR -> execution plan (JSON) --------------------===//

#include "weft/Target/Plan/EmitPlan.h"

#include "EmitProgram.h"

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

std::string weft::jsonText(const json &value) { return rt::compactJson(value); }

void weft::printPlan(const json &plan, llvm::raw_ostream &os) {
  os << rt::printPlanText(plan);
}

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
        ProgramEmitter(ordered[stage], *memoryOf[stage], stage, mesh, *zeroMesh,
                       dropoutsBefore[stage], options.taskBodies)
            .emit();
    if (failed(section))
      return;
    if (!options.taskBodies ||
        !writeTaskBodies(section->program, section->instances,
                         section->frameRepeats, section->homes,
                         memoryOf[stage]->slots))
      addTaskFields(section->program, section->instances);
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
