//===- LayoutEstimate.cpp - layouts estimated from one-stage profiles -----===//

#include "LayoutEstimate.h"

#include "PipelineReport.h"

#include "weft/Analysis/TaskOrder.h"
#include "weft/Dialect/Weft/IR/Task.h"

#include <algorithm>
#include <limits>

using namespace mlir;

weft::StepProfile weft::profileStep(ModuleOp module, const SimResult &step,
                                    const DeviceModel &device,
                                    int64_t arenaBytes,
                                    const MemoryBreakdown &breakdown) {
  StepProfile profile;
  func::FuncOp func = rankFunctions(module).front();
  double busy = 0;
  for (Operation &op : func.getBody().front().without_terminator()) {
    double seconds = opSeconds(&op, device);
    if (collectiveKind(&op)) {
      // In flight while compute runs; its exposed part is the step's
      // excess over the compute, spread below.
      continue;
    }
    busy += seconds;
    Roofline roofline = opRoofline(&op, device);
    (roofline.memoryBound() ? profile.memory : profile.compute) += seconds;
    switch (taskKindOf(&op)) {
    case TaskKind::Forward:
      profile.forward += seconds;
      break;
    case TaskKind::Backward:
    case TaskKind::Recompute:
      profile.backward += seconds;
      break;
    case TaskKind::Weight:
      profile.weight += seconds;
      break;
    case TaskKind::Update:
      profile.update += seconds;
      break;
    }
  }
  // Exposed collectives (the tensor axis': P = D = 1) stretch the tasks
  // they sit in; spread over the micro-batch's tasks by their share.
  profile.tensorComm = std::max(0.0, step.stepSeconds - busy);
  double work = profile.forward + profile.backward + profile.weight;
  if (work > 0) {
    double stretch = 1 + profile.tensorComm / work;
    profile.forward *= stretch;
    profile.backward *= stretch;
    profile.weight *= stretch;
  }
  profile.states = modelStates(func);
  profile.kept = breakdown.maxKeptActivations;
  profile.other =
      std::max<int64_t>(0, arenaBytes - profile.states.total() - profile.kept);
  StepUtilization use = stepUtilization(module, step.stepSeconds, device,
                                        /*sixteenBit=*/false);
  profile.modelFlops = use.modelFlops;
  profile.hardwareFlops = use.hardwareFlops;
  return profile;
}

std::optional<int64_t> weft::ScheduleCache::inFlight(ScheduleKind kind,
                                                     int64_t ranks,
                                                     int64_t microBatches,
                                                     int64_t chunks,
                                                     std::string &why) {
  Key key{int(kind), ranks, microBatches, chunks};
  auto [it, fresh] = orders.try_emplace(key);
  Orders &o = it->second;
  if (fresh) {
    o.orders = rankTaskOrders(kind, ranks, microBatches, chunks, &o.why);
    std::optional<TaskOrderSimulation> sim =
        o.orders.empty()
            ? std::nullopt
            : simulateTaskOrders(kind, ranks, o.orders,
                                 uniformStageTimes(kind, chunks), &o.why);
    int64_t perRank = chunksPerRank(kind, chunks);
    if (sim)
      o.inFlight = (sim->peakActivations[0] + perRank - 1) / perRank;
    else
      o.orders.clear();
  }
  if (o.orders.empty()) {
    why = o.why;
    return std::nullopt;
  }
  return o.inFlight;
}

double weft::ScheduleCache::makespan(ScheduleKind kind, int64_t ranks,
                                     int64_t microBatches, int64_t chunks,
                                     double forward, double backward,
                                     double weight) {
  Key key{int(kind), ranks, microBatches, chunks};
  auto [it, fresh] =
      makespans.try_emplace({key, forward, backward, weight}, 0.0);
  if (fresh) {
    int64_t perRank = chunksPerRank(kind, chunks);
    std::string why;
    std::optional<TaskOrderSimulation> sim = simulateTaskOrders(
        kind, ranks, orders.at(key).orders,
        {forward / perRank, backward / perRank, weight / perRank, 0.0}, &why);
    it->second = sim ? sim->makespan : std::numeric_limits<double>::infinity();
  }
  return it->second;
}

weft::LayoutScore weft::estimateLayout(const Layout &layout,
                                       const StepProfile &profile,
                                       int64_t batch, const DeviceModel &device,
                                       bool sixteenBit, int64_t capBytes,
                                       ScheduleCache &cache) {
  LayoutScore score;
  score.layout = layout;
  score.estimated = true;
  int64_t p = layout.pipeline, d = layout.data, m = layout.microbatches;
  // A micro-batch of b samples, per stage.
  double b = double(batch) / double(d * m);
  double forward = b * profile.forward / p;
  double backward = b * profile.backward / p;
  double weight = b * profile.weight / p;
  if (!splitsWeightGradient(layout.schedule)) {
    backward += weight;
    weight = 0;
  }
  int64_t inFlight = 1; // rank 0's most micro-batches of a whole stage
  if (p > 1) {
    std::string why;
    std::optional<int64_t> held =
        cache.inFlight(layout.schedule, p, m, layout.virtualStages, why);
    if (!held) {
      score.error =
          "--schedule " + scheduleName(layout.schedule).str() + ": " + why;
      return score;
    }
    inFlight = *held;
  }

  // Memory of rank 0: model states over P, sharded over D by ZeRO stage;
  // the kept activations of the micro-batches it holds; the rest.
  const ModelStates &states = profile.states;
  int64_t params = states.params / p, gradients = states.gradients / p,
          optimizer = states.optimizerState / p;
  if (layout.zeroStage >= 1)
    optimizer /= d;
  if (layout.zeroStage >= 2)
    gradients /= d;
  if (layout.zeroStage >= 3)
    params /= d;
  int64_t kept = int64_t(b * double(profile.kept) / p) * inFlight;
  int64_t other = int64_t(b * double(profile.other) / p);
  MemoryBreakdown &memory = score.breakdown;
  memory.bytes[size_t(MemoryCategory::Parameters)] = params;
  memory.bytes[size_t(MemoryCategory::Gradients)] = gradients;
  memory.bytes[size_t(MemoryCategory::OptimizerState)] = optimizer;
  memory.bytes[size_t(MemoryCategory::KeptActivations)] = kept;
  memory.bytes[size_t(MemoryCategory::Temporaries)] = other;
  score.peakBytes = params + gradients + optimizer + kept + other;
  if (capBytes > 0 && score.peakBytes > capBytes) {
    score.stepSeconds = std::numeric_limits<double>::infinity();
    return score;
  }

  // The pipeline: the schedule's own orders, on uniform stages.
  double pipeline =
      p > 1 ? cache.makespan(layout.schedule, p, m, layout.virtualStages,
                             forward, backward, weight)
            : m * (forward + backward + weight);
  // The update, over the data axis with ZeRO.
  double update = profile.update / p;
  if (layout.zeroStage > 0)
    update /= d;
  // Data parallel: the rank's gradients reduced (and its parameters
  // gathered under ZeRO) over D ranks, placed as the mesh (pipeline,
  // data, tensor) places them.
  double data = 0;
  if (d > 1) {
    int64_t shape[] = {p, d, layout.tensor};
    int16_t dataAxis[] = {1};
    int64_t perNode = groupRanksPerNode(shape, dataAxis, device.devicesPerNode);
    auto time = [&](CollectiveKind kind, int64_t bytes) {
      return collectiveSeconds(kind, bytes, d, device, perNode);
    };
    // The stage's whole gradients and parameters, as the ring moves them.
    int64_t stageGradients = states.gradients / p,
            stageParams = states.params / p;
    // ZeRO-2 and 3 keep gradients sharded: each micro-batch's are
    // reduce-scattered as they are made.
    double reduce =
        layout.zeroStage == 0 ? time(CollectiveKind::AllReduce, stageGradients)
        : layout.zeroStage == 1
            ? time(CollectiveKind::ReduceScatter, stageGradients) +
                  time(CollectiveKind::AllGather, stageParams)
            : m * time(CollectiveKind::ReduceScatter, stageGradients) +
                  time(CollectiveKind::AllGather, stageParams);
    // Buckets overlap the last micro-batch's backward.
    data = std::max(0.0, reduce - (backward + weight));
    // ZeRO-3 gathers the parameters before each micro-batch's forward and
    // backward, overlapping the compute before them.
    if (layout.zeroStage == 3)
      data +=
          std::max(0.0, 2 * m * time(CollectiveKind::AllGather, stageParams) -
                            m * (forward + backward + weight));
  }
  score.stepSeconds = pipeline + update + data;
  // Where it goes: the profile's shares of the tasks' work.
  double work = m * (forward + backward + weight);
  double profileWork = profile.forward + profile.backward + profile.weight;
  double share = profileWork > 0 ? work / profileWork : 0;
  score.tensorComm = profile.tensorComm * share;
  double busy = profile.compute + profile.memory;
  double compute = busy > 0 ? profile.compute / busy : 1;
  score.compute = (work - score.tensorComm + update) * compute;
  score.memory = (work - score.tensorComm + update) * (1 - compute);
  score.bubble = pipeline - work;
  score.dataComm = data;

  double peak = sixteenBit ? device.flops16PerSecond : device.flopsPerSecond;
  double ranks = double(layout.devices());
  score.mfu = b * double(profile.modelFlops) * m * d /
              (score.stepSeconds * ranks * peak);
  score.hfu = b * double(profile.hardwareFlops) * m * d /
              (score.stepSeconds * ranks * peak);
  return score;
}
