//===- PipelineReport.cpp - weftc's per-stage table -----------------------===//

#include "PipelineReport.h"

#include "weft/Analysis/StepFlops.h"

#include "weft/Analysis/CostModel.h"
#include "weft/Analysis/DeviceModelFile.h"
#include "weft/Analysis/MemoryPlan.h"
#include "weft/Analysis/Partition.h"
#include "weft/Analysis/TaskOrder.h"
#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <set>

using namespace mlir;

bool weft::collectiveOverAxis(Operation *op, int64_t axis) {
  if (weft::onZeroMesh(op))
    return false;
  ArrayRef<shard::GridAxis> axes;
  if (auto o = dyn_cast<shard::AllReduceOp>(op))
    axes = o.getGridAxes();
  else if (auto o = dyn_cast<shard::AllGatherOp>(op))
    axes = o.getGridAxes();
  else if (auto o = dyn_cast<shard::ReduceScatterOp>(op))
    axes = o.getGridAxes();
  return axes.size() == 1 && axes[0] == axis;
}

void weft::printStageTable(ModuleOp module, const SimResult &prediction,
                           MemoryPlans &memoryPlans, const DeviceModel &device,
                           llvm::raw_ostream &os) {
  SmallVector<func::FuncOp> stages = rankFunctions(module);
  if (stages.empty())
    return;
  memoryPlans.planAll(stages);
  bool pipelined = stages[0]->hasAttr(kStageAttr);
  int64_t microbatches = 1;
  if (auto m = stages[0]->getAttrOfType<IntegerAttr>(kMicroBatchesAttr))
    microbatches = m.getInt();
  int64_t tensor = 1, data = 1, dataAxis = -1, tensorAxis = -1;
  if (FailureOr<std::optional<DeviceMesh>> mesh = getDeviceMesh(module);
      succeeded(mesh) && *mesh) {
    tensor = (*mesh)->sizeOf("tensor");
    data = (*mesh)->sizeOf("data");
    dataAxis = (*mesh)->axisIndex("data");
    tensorAxis = (*mesh)->axisIndex("tensor");
  }
  // A pipelined module's schedule, and its model chunks per rank.
  StringRef schedule;
  int64_t chunks = 1;
  if (pipelined) {
    schedule = stages[0]->getAttrOfType<StringAttr>("weft.schedule").getValue();
    if (auto chunkStages =
            stages[0]->getAttrOfType<DenseI64ArrayAttr>(kChunkStagesAttr))
      chunks = chunkStages.size();
    os << llvm::formatv(
        "pipeline: {0} stages, {1} micro-batches, schedule {2}{3}\n",
        stages.size(), microbatches, schedule,
        chunks > 1 ? llvm::formatv(" ({0} chunks per rank)", chunks).str()
                   : std::string());
  }
  // Collectives per step by kind: how many, and the bytes one rank sends
  // in them (ring). Sequence parallelism adds all-gathers and reduce-
  // scatters.
  // Indexed by CollectiveKind (AllReduce, AllGather, ReduceScatter).
  constexpr const char *names[] = {"all-reduce", "all-gather",
                                   "reduce-scatter"};
  // Sequence parallelism reduce-scatters over the tensor axis; all-gathers
  // there come from it or from replicated kv heads read in parts.
  bool sequence = false, gathers = false;
  int64_t zeroStage = 0;
  for (func::FuncOp func : stages)
    func.walk([&](Operation *op) {
      std::optional<CollectiveKind> kind = collectiveKind(op);
      if (kind && collectiveOverAxis(op, tensorAxis)) {
        sequence |= *kind == CollectiveKind::ReduceScatter;
        gathers |= *kind == CollectiveKind::AllGather;
      }
      if (auto stage = op->getAttrOfType<IntegerAttr>(kZeroStageAttr))
        zeroStage = stage.getInt();
    });
  int64_t shownKinds = tensor == 1 ? 0 : sequence || gathers ? 3 : 1;
  if (tensor > 1)
    os << llvm::formatv("tensor parallel: {0} ranks per stage (each row is "
                        "one of them){1}; collectives per step and the bytes "
                        "one rank sends in them (ring)\n",
                        tensor, sequence ? ", sequence parallel" : "");
  if (data > 1 && zeroStage == 0)
    os << llvm::formatv("data parallel: {0} replicas per stage; gradients "
                        "all-reduced in buckets (DDP), the bytes one rank "
                        "sends in them (ring)\n",
                        data);
  else if (data > 1) {
    // ZeRO's groups, when smaller than the data axis.
    std::string groups;
    if (auto zero = getDeviceMesh(module, kZeroMeshSymbol);
        succeeded(zero) && *zero)
      groups = llvm::formatv(" over groups of {0} (pieces all-reduced "
                             "across groups)",
                             (*zero)->sizeOf(kDataShardAxis));
    os << llvm::formatv("data parallel: {0} replicas per stage, ZeRO stage "
                        "{1}{2}; gradients reduce-scattered in buckets, "
                        "parameters all-gathered, the bytes one rank sends "
                        "in them (ring)\n",
                        data, zeroStage, groups);
  }
  os << llvm::formatv("{0,5} {1,6} {2,12} {3,14} {4,10} {5,12} {6,12}",
                      "stage", "ops", "params", "peak bytes", "busy ms",
                      "send bytes", "recv bytes");
  if (data > 1)
    os << llvm::formatv(" {0,8} {1,18}", "buckets", "data bytes sent");
  for (int64_t k = 0; k < shownKinds; ++k)
    os << llvm::formatv(" {0,16} {1,20}", std::string(names[k]) + "s",
                        std::string(names[k]) + " sent");
  os << "\n";
  double inFlight = 0; // collectives' seconds, unpipelined
  for (auto [s, func] : llvm::enumerate(stages)) {
    int64_t ops = 0, params = 0, sent = 0, received = 0;
    int64_t count[3] = {0, 0, 0}, bytesSent[3] = {0, 0, 0};
    int64_t bucketBytesSent = 0;
    std::set<int64_t> buckets;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kParamAttr))
        params += numElements(arg.getType());
    for (Operation &op : func.getBody().front().without_terminator()) {
      if (auto send = dyn_cast<ISendOp>(op)) {
        sent += byteSize(send.getValue().getType());
      } else if (auto recv = dyn_cast<IRecvOp>(op)) {
        received += byteSize(recv.getBuffer().getType());
      } else if (std::optional<CollectiveKind> kind = collectiveKind(&op);
                 kind &&
                 (op.hasAttr(kBucketAttr) ||
                  collectiveOverAxis(&op, dataAxis) || onZeroMesh(&op))) {
        // A bucket's all-reduce, or (ZeRO) its reduce-scatter and the
        // all-gather of its updated parameters; stage 3's gathers of a
        // parameter before its uses.
        if (auto bucket = op.getAttrOfType<IntegerAttr>(kBucketAttr))
          buckets.insert(bucket.getInt());
        bucketBytesSent += collectiveBytesSent(*kind, collectiveBytes(&op),
                                               collectiveRanks(&op));
      } else if (std::optional<CollectiveKind> kind = collectiveKind(&op)) {
        int k = static_cast<int>(*kind);
        ++count[k];
        bytesSent[k] += collectiveBytesSent(*kind, collectiveBytes(&op),
                                            collectiveRanks(&op));
      } else if (microBatchOf(&op).value_or(0) == 0 && isForward(&op) &&
                 !isa<ConstantOp, WaitRecvOp, WaitSendOp>(op)) {
        // Forward ops of one micro-batch: the stage's share of the model.
        ++ops;
      }
    }
    const MemoryPlan &memory = memoryPlans.of(func);
    double busy = s < prediction.busySeconds.size()
                      ? prediction.busySeconds[s] * 1e3
                      : 0.0;
    if (!pipelined) {
      for (Operation &op : func.getBody().front().without_terminator())
        if (collectiveKind(&op))
          inFlight += opSeconds(&op, device);
    }
    os << llvm::formatv("{0,5} {1,6} {2,12} {3,14} {4,10:f2} {5,12} {6,12}",
                        s, ops, params, memory.arenaBytes, busy, sent,
                        received);
    if (data > 1)
      os << llvm::formatv(" {0,8} {1,18}", buckets.size(), bucketBytesSent);
    for (int64_t k = 0; k < shownKinds; ++k)
      os << llvm::formatv(" {0,16} {1,20}", count[k], bytesSent[k]);
    os << "\n";
  }
  if (!pipelined) {
    // The simulated rank: collectives run while later compute does; what
    // the step spends beyond its compute is their exposed part.
    double step = prediction.stepSeconds * 1e3;
    double busy = prediction.busySeconds.empty()
                      ? 0.0
                      : prediction.busySeconds[0] * 1e3;
    os << llvm::formatv("predicted step: {0:f2} ms, collectives {1:f2} ms of "
                        "it exposed ({2:f2} ms in flight)\n",
                        step, step - busy, inFlight * 1e3);
    return;
  }
  os << llvm::formatv(
      "predicted step: {0:f2} ms, bubble fraction {1:f3} (uniform stages: "
      "{2:f3})\n",
      prediction.stepSeconds * 1e3, prediction.bubbleFraction,
      uniformBubbleFraction(
          scheduleNamed(schedule).value_or(ScheduleKind::OneFOneB),
          stages.size(), microbatches, chunks));
}

weft::StepUtilization weft::stepUtilization(ModuleOp module, double stepSeconds,
                                            const DeviceModel &device,
                                            bool sixteenBit) {
  // One program per pipeline rank, run by each of its data and tensor
  // ranks (their shards' and batch shares' FLOPs).
  SmallVector<func::FuncOp> programs = rankFunctions(module);
  int64_t perProgram = ranksPerProgram(module);
  StepUtilization use;
  use.ranks = perProgram * int64_t(programs.size());
  for (func::FuncOp program : programs) {
    StepFlops flops = stepFlops(program);
    use.modelFlops += double(flops.model) * double(perProgram);
    use.hardwareFlops += double(flops.hardware) * double(perProgram);
  }
  use.peakFlopsPerSecond =
      sixteenBit ? device.flops16PerSecond : device.flopsPerSecond;
  if (stepSeconds > 0 && use.ranks > 0) {
    use.mfu = flopsUtilization(use.modelFlops, stepSeconds, use.ranks,
                               use.peakFlopsPerSecond);
    use.hfu = flopsUtilization(use.hardwareFlops, stepSeconds, use.ranks,
                               use.peakFlopsPerSecond);
  }
  return use;
}

void weft::printUtilization(ModuleOp module, double stepSeconds,
                            const DeviceModel &device, bool sixteenBit,
                            raw_ostream &os) {
  StepUtilization use =
      stepUtilization(module, stepSeconds, device, sixteenBit);
  if (stepSeconds <= 0 || use.ranks == 0)
    return;
  os << llvm::formatv(
      "predicted MFU {0:f1}%, HFU {1:f1}%: model {2:f0}, hardware {3:f0} "
      "FLOPs a step on {4} ranks, {5} peak {6:e3} FLOP/s each ({7})\n",
      100 * use.mfu, 100 * use.hfu, use.modelFlops, use.hardwareFlops,
      use.ranks, device.name, use.peakFlopsPerSecond,
      sixteenBit ? "16-bit" : "f32");
}

LogicalResult weft::reportPipeline(ModuleOp module, MemoryPlans &memory,
                                   std::optional<SimResult> &&simulated,
                                   const ReportOptions &options) {
  // Loaded (and checked) by the pipeline's validation already.
  DeviceModel device =
      options.deviceModel.empty()
          ? DeviceModel()
          : llvm::cantFail(loadDeviceModel(options.deviceModel));
  SimResult prediction =
      simulated ? std::move(*simulated)
                : simulatePipeline(stagePrograms(module, device), device);
  llvm::raw_ostream &report = options.toStderr ? llvm::errs() : llvm::outs();
  printStageTable(module, prediction, memory, device, report);
  printUtilization(module, prediction.stepSeconds, device, options.sixteenBit,
                   report);
  if (options.asciiTimeline)
    printAsciiTimeline(prediction, prediction.busySeconds.size(), report);
  if (options.timeline.empty())
    return success();
  if (llvm::Error error =
          llvm::writeToOutput(options.timeline, [&](llvm::raw_ostream &os) {
            os << chromeTrace(prediction.events) << "\n";
            return llvm::Error::success();
          })) {
    llvm::errs() << "weftc: --timeline: cannot write '" << options.timeline
                 << "': " << llvm::toString(std::move(error)) << "\n";
    return failure();
  }
  return success();
}
