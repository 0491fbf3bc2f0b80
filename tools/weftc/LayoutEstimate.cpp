//===- LayoutEstimate.cpp - layouts estimated from one-stage profiles -----===//

#include "LayoutEstimate.h"

#include "PipelineReport.h"

#include "weft/Analysis/RepeatedLayers.h"
#include "weft/Analysis/TaskOrder.h"
#include "weft/Dialect/Weft/IR/ShapeUtils.h"
#include "weft/Dialect/Weft/IR/Task.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cassert>
#include <limits>

using namespace mlir;

int64_t weft::weightHeldBytes(func::FuncOp func, const MemoryPlan &plan) {
  Block &body = func.getBody().front();
  int lastWeight = -1;
  for (auto [index, op] : llvm::enumerate(body.without_terminator()))
    if (taskKindOf(&op) == TaskKind::Weight)
      lastWeight = int(index);
  llvm::DenseSet<unsigned> counted;
  int64_t bytes = 0;
  for (Operation &op : body.without_terminator()) {
    if (taskKindOf(&op) != TaskKind::Weight)
      continue;
    for (Value operand : op.getOperands()) {
      auto it = plan.storageOf.find(operand);
      if (it == plan.storageOf.end())
        continue;
      const Storage &storage = plan.storages[it->second];
      Operation *writer = storage.value.getDefiningOp();
      if (storage.kind != BufferKind::Activation || !writer ||
          taskKindOf(writer) == TaskKind::Weight || storage.end > lastWeight ||
          !counted.insert(it->second).second)
        continue;
      bytes += storage.size;
    }
  }
  return bytes;
}

weft::StepProfile weft::profileStep(ModuleOp module, const SimResult &step,
                                    const DeviceModel &device,
                                    const MemoryPlan &plan,
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
    // The micro-batch's work, op by op (for ZeRO-3's gathers: the
    // parameters each reads) and by its bound; the update (elementwise
    // over the model states) is counted as memory-bound by the estimate.
    if (taskKindOf(&op) != TaskKind::Update) {
      ProfiledOp &profiled = profile.ops.emplace_back();
      profiled.perSample = seconds;
      for (Value operand : op.getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand);
            arg && arg.getOwner()->getParentOp() == func &&
            func.getArgAttr(arg.getArgNumber(), kParamAttr))
          profiled.paramBytes.push_back(byteSize(arg.getType()));
      Roofline roofline = opRoofline(&op, device);
      (roofline.memoryBound() ? profile.memory : profile.compute) += seconds;
    }
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
  profile.weightHeld = weightHeldBytes(func, plan);
  profile.boundary = layerBoundaryBytes(func);
  // The moments estimatedPeak weighs (below). A parameter gradient is a
  // backward's result that lives on to the update.
  int64_t updateStart = plan.numSteps;
  for (auto [index, op] :
       llvm::enumerate(func.getBody().front().without_terminator()))
    if (taskKindOf(&op) == TaskKind::Update) {
      updateStart = int64_t(index);
      break;
    }
  // Bytes live, and kept, at each step.
  int64_t steps = plan.numSteps;
  std::vector<MemoryCategory> categories;
  for (const Storage &storage : plan.storages)
    categories.push_back(categoryOf(storage));
  LiveBytes live = liveBytesByStep(plan, categories);
  // The first step of [from, to) with the most of `bytes` (-1: empty).
  auto most = [](const std::vector<int64_t> &bytes, int64_t from, int64_t to) {
    int64_t at = -1;
    for (int64_t step = from; step < to; ++step)
      if (at < 0 || bytes[step] > bytes[at])
        at = step;
    return at;
  };
  auto moment = [&](int64_t step) {
    StepProfile::Moment at;
    for (auto [storage, category] :
         llvm::zip_equal(plan.storages, categories)) {
      if (storage.start > step || step > storage.end)
        continue;
      if (category == MemoryCategory::KeptActivations)
        at.kept += storage.size;
      else if (category == MemoryCategory::Gradients &&
               storage.end >= updateStart)
        at.gradients += storage.size;
    }
    at.other = std::max<int64_t>(0, live.all[step] - profile.states.params -
                                        profile.states.optimizerState -
                                        at.gradients - at.kept);
    return at;
  };
  // Three moments, each found by where it lies (so that profiles of more
  // layers find the same one): the backward's start, where the kept
  // activations peak; the backward's most live step after it (recompute's
  // peak); and the update's.
  int64_t start = most(live.kept, 0, std::min(steps, updateStart));
  for (int64_t step : {start, most(live.all, start + 1, updateStart),
                       most(live.all, updateStart, steps)})
    if (step >= 0) {
      profile.moments.push_back(moment(step));
      profile.moments.back().start = step == start;
    }
  StepUtilization use = stepUtilization(module, step.stepSeconds, device,
                                        /*sixteenBit=*/false);
  profile.modelFlops = use.modelFlops;
  profile.hardwareFlops = use.hardwareFlops;
  return profile;
}

weft::StepProfile weft::extrapolateProfile(const StepProfile &a,
                                           const StepProfile &b, int64_t fewer,
                                           int64_t layers) {
  double more = double(layers - fewer);
  auto grow = [&](auto x, auto y) {
    return decltype(x)(double(x) + more * (double(y) - double(x)));
  };
  StepProfile p;
  p.forward = grow(a.forward, b.forward);
  p.backward = grow(a.backward, b.backward);
  p.weight = grow(a.weight, b.weight);
  p.forwardFixed = grow(a.forwardFixed, b.forwardFixed);
  p.backwardFixed = grow(a.backwardFixed, b.backwardFixed);
  p.weightFixed = grow(a.weightFixed, b.weightFixed);
  p.update = grow(a.update, b.update);
  p.compute = grow(a.compute, b.compute);
  p.memory = grow(a.memory, b.memory);
  p.computeFixed = grow(a.computeFixed, b.computeFixed);
  p.memoryFixed = grow(a.memoryFixed, b.memoryFixed);
  p.tensorComm = grow(a.tensorComm, b.tensorComm);
  p.states = b.states;
  p.states.params = grow(a.states.params, b.states.params);
  p.states.paramCount = grow(a.states.paramCount, b.states.paramCount);
  p.states.gradients = grow(a.states.gradients, b.states.gradients);
  p.states.optimizerState =
      grow(a.states.optimizerState, b.states.optimizerState);
  p.states.replicatedCount =
      grow(a.states.replicatedCount, b.states.replicatedCount);
  p.states.replicatedBytes =
      grow(a.states.replicatedBytes, b.states.replicatedBytes);
  p.kept = grow(a.kept, b.kept);
  p.weightHeld = grow(a.weightHeld, b.weightHeld);
  // Moment by moment: the two profiles compiled alike but for the layers,
  // so they find the same moments (should they not, the larger profile's
  // stand, not extrapolated).
  p.moments = b.moments;
  if (a.moments.size() == b.moments.size())
    for (auto [into, x, y] : llvm::zip(p.moments, a.moments, b.moments)) {
      into.gradients = std::max<int64_t>(0, grow(x.gradients, y.gradients));
      into.kept = std::max<int64_t>(0, grow(x.kept, y.kept));
      into.other = std::max<int64_t>(0, grow(x.other, y.other));
    }
  p.boundary = b.boundary;
  p.ops = a.ops;
  p.opsMore = b.ops;
  p.repeat = layers - fewer;
  p.modelFlops = grow(a.modelFlops, b.modelFlops);
  p.hardwareFlops = grow(a.hardwareFlops, b.hardwareFlops);
  return p;
}

weft::StepProfile weft::fitPerSample(const StepProfile &one,
                                     const StepProfile &two) {
  StepProfile p = one;
  auto split = [](double at1, double at2, double &perSample, double &fixed) {
    fixed = std::clamp(2 * at1 - at2, 0.0, at1);
    perSample = at1 - fixed;
  };
  split(one.forward, two.forward, p.forward, p.forwardFixed);
  split(one.backward, two.backward, p.backward, p.backwardFixed);
  split(one.weight, two.weight, p.weight, p.weightFixed);
  split(one.compute, two.compute, p.compute, p.computeFixed);
  split(one.memory, two.memory, p.memory, p.memoryFixed);
  // The moments of both: a recompute's peak may outgrow the update's
  // only from two samples on.
  for (StepProfile::Moment at : two.moments) {
    at.samples = 2;
    p.moments.push_back(at);
  }
  // Op by op when the two compiled alike (they do but for the batch).
  if (two.ops.size() == one.ops.size())
    for (auto [op, at2] : llvm::zip(p.ops, two.ops))
      split(op.perSample, at2.perSample, op.perSample, op.fixed);
  return p;
}

const std::vector<weft::ScheduleCache::Held> *
weft::ScheduleCache::inFlight(ScheduleKind kind, int64_t ranks,
                              int64_t microBatches, int64_t chunks,
                              std::string &why) {
  Key key{int(kind), ranks, microBatches, chunks};
  auto [it, fresh] = held.try_emplace(key);
  Orders &h = it->second;
  if (fresh) {
    std::vector<std::vector<OrderedTask>> orders =
        rankTaskOrders(kind, ranks, microBatches, chunks, &h.why);
    bool split = splitsWeightGradient(kind);
    std::vector<Held> points;
    // A rank runs its tasks one at a time: after an F it holds one more
    // chunk's kept activations, after a B (where W is split off) one fewer
    // and one more chunk's W inputs, after the W none of either.
    for (const std::vector<OrderedTask> &order : orders) {
      Held now;
      for (const OrderedTask &task : order) {
        if (task.kind == TaskKind::Forward) {
          ++now.forward;
        } else if (task.kind == TaskKind::Backward) {
          --now.forward;
          if (!split)
            continue;
          ++now.weight;
        } else if (task.kind == TaskKind::Weight) {
          --now.weight;
          continue;
        }
        points.push_back(now);
      }
    }
    // Only the pairs no other has as many of both can be the peak.
    llvm::sort(points, [](const Held &a, const Held &b) {
      return a.forward != b.forward ? a.forward > b.forward
                                    : a.weight > b.weight;
    });
    for (const Held &point : points)
      if (h.frontier.empty() || point.weight > h.frontier.back().weight)
        h.frontier.push_back(point);
  }
  if (!h.why.empty()) {
    why = h.why;
    return nullptr;
  }
  return &h.frontier;
}

double weft::ScheduleCache::makespan(ScheduleKind kind, int64_t ranks,
                                     int64_t microBatches, int64_t chunks,
                                     double forward, double backward,
                                     double weight, double transfer,
                                     const std::vector<double> &stageScale) {
  Key key{int(kind), ranks, microBatches, chunks};
  auto [it, fresh] =
      makespans.try_emplace({key, backward / forward, weight / forward,
                             transfer / forward, stageScale},
                            0.0);
  if (fresh) {
    int64_t perRank = chunksPerRank(kind, chunks);
    std::string why;
    std::vector<std::vector<OrderedTask>> orders =
        rankTaskOrders(kind, ranks, microBatches, chunks, &why);
    TaskTimes times{1.0 / perRank, backward / forward / perRank,
                    weight / forward / perRank, transfer / forward, stageScale};
    std::optional<TaskOrderSimulation> sim =
        orders.empty() ? std::nullopt
                       : simulateTaskOrders(kind, ranks, orders, times, &why);
    it->second = sim ? sim->makespan : std::numeric_limits<double>::infinity();
  }
  return forward * it->second;
}

double weft::ScheduleCache::makespanBound(
    ScheduleKind kind, int64_t ranks, int64_t microBatches, int64_t chunks,
    double forward, double backward, double weight, double transfer,
    const std::vector<double> &stageScale) {
  int64_t perRank = chunksPerRank(kind, chunks);
  assert(
      (stageScale.empty() || int64_t(stageScale.size()) == ranks * perRank) &&
      "a scale for every stage");
  // The forwards of the stages before the last rank's first, and each
  // rank's own work.
  double before = 0;
  for (int64_t s = 0; s + 1 < ranks; ++s)
    before +=
        forward / double(perRank) * (stageScale.empty() ? 1.0 : stageScale[s]) +
        transfer;
  std::vector<double> loads = rankLoads(kind, ranks, chunks, stageScale);
  double bound = 0;
  for (int64_t r = 0; r < ranks; ++r)
    bound = std::max(bound, double(microBatches) *
                                    (forward + backward + weight) * loads[r] +
                                (r == ranks - 1 ? before : 0.0));
  return bound;
}

double weft::exposedGatherSeconds(const StepProfile &profile, double samples,
                                  int64_t thresholdBytes,
                                  llvm::function_ref<double(int64_t)> gather) {
  auto exposed = [&](const std::vector<ProfiledOp> &ops) {
    double computeFree = 0, commFree = 0, previousStart = 0, busy = 0;
    for (const ProfiledOp &op : ops) {
      double start = computeFree;
      for (int64_t bytes : op.paramBytes)
        if (bytes >= thresholdBytes) {
          commFree = std::max(previousStart, commFree) + gather(bytes);
          start = std::max(start, commFree);
        }
      double seconds = op.fixed + samples * op.perSample;
      previousStart = start;
      computeFree = start + seconds;
      busy += seconds;
    }
    return computeFree - busy;
  };
  double fewer = exposed(profile.ops);
  if (profile.repeat == 0)
    return fewer;
  return std::max(0.0, fewer + double(profile.repeat) *
                                   (exposed(profile.opsMore) - fewer));
}

double weft::bucketCopyBytes(int64_t zeroStage, int64_t gradients,
                             int64_t params, int64_t microBatches,
                             int64_t replicas) {
  double g = double(gradients), w = double(params), d = double(replicas);
  double m = double(microBatches);
  // The gradients packed into buckets: once a step, or under ZeRO-2 and 3
  // each micro-batch's (reduce-scattered as it is made), whose pieces
  // are then summed (two reads and a write of a piece per micro-batch
  // after the first).
  double pack = zeroStage >= 2 ? 2 * m * g + 3 * (m - 1) * g / d : 2 * g;
  if (zeroStage == 0)
    return pack + 2 * g; // the reduced buckets unpacked
  // The reduced shard split into its parameters' pieces.
  double shard = 2 * g / d;
  if (zeroStage == 3)
    return pack + shard; // the pieces are the parameters, updated in place
  // ZeRO-1 and 2: the updated pieces packed, the gathered bucket split
  // into the parameters, and those assigned in place (a read of each side
  // and a write). (Each parameter's piece is sliced out for the update by
  // shard.all_slice, which the cost model times as a collective.)
  return pack + shard + 2 * w / d + 2 * w + 3 * w;
}

weft::MemoryBreakdown
weft::estimatedPeak(int64_t params, int64_t gradients, int64_t optimizer,
                    int64_t kept, int64_t one, int64_t startExtra,
                    llvm::ArrayRef<StepProfile::Moment> moments,
                    int64_t replicas, int64_t microBatches, int64_t zeroStage,
                    int64_t bucketCapBytes) {
  int64_t pieces = zeroStage >= 2 ? gradients / replicas : gradients;
  MemoryBreakdown most;
  auto consider = [&](int64_t held, int64_t keptNow, int64_t other) {
    int64_t bytes = params + optimizer + held + keptNow + other;
    if (bytes <= most.liveBytes)
      return;
    most.bytes = {};
    most.bytes[size_t(MemoryCategory::Parameters)] = params;
    most.bytes[size_t(MemoryCategory::OptimizerState)] = optimizer;
    most.bytes[size_t(MemoryCategory::Gradients)] = held;
    most.bytes[size_t(MemoryCategory::KeptActivations)] = keptNow;
    most.bytes[size_t(MemoryCategory::Temporaries)] = other;
    most.liveBytes = bytes;
  };
  for (const StepProfile::Moment &at : moments) {
    // The earlier micro-batches' sums: ZeRO 0 and 1 add the moment's
    // gradients into them, ZeRO-2 and 3 hold its own beside their pieces.
    int64_t held = microBatches == 1 ? at.gradients
                   : zeroStage >= 2  ? pieces + at.gradients
                                     : gradients;
    int64_t keptNow = std::max<int64_t>(0, kept - (one - at.kept));
    consider(held, keptNow + (at.start ? startExtra : 0), at.other);
  }
  if (replicas > 1) {
    int64_t packed = gradients + std::min(gradients, bucketCapBytes);
    if (zeroStage >= 2 && microBatches > 1)
      packed += pieces;
    consider(packed, 0, 0);
  }
  most.maxKeptActivations = kept;
  return most;
}

weft::LayoutScore
weft::estimateLayout(const Layout &layout, const StepProfile &profile,
                     int64_t batch, const DeviceModel &device, bool sixteenBit,
                     int64_t capBytes, ScheduleCache &cache, bool exact,
                     const std::vector<double> &stageScale,
                     int64_t shardThresholdBytes, int64_t bucketCapBytes) {
  LayoutScore score;
  score.layout = layout;
  score.estimated = true;
  int64_t p = layout.pipeline, d = layout.data, m = layout.microbatches;
  // A micro-batch of b samples, per stage.
  double b = double(batch) / double(d * m);
  // A task kind's seconds on a stage: its fixed part and b per-sample ones.
  auto onStage = [&](double fixed, double perSample) {
    return (fixed + b * perSample) / p;
  };
  double forward = onStage(profile.forwardFixed, profile.forward);
  double backward = onStage(profile.backwardFixed, profile.backward);
  double weight = onStage(profile.weightFixed, profile.weight);
  if (!splitsWeightGradient(layout.schedule)) {
    backward += weight;
    weight = 0;
  }
  // A whole stage's kept activations of one micro-batch, and what its W
  // tasks hold from its B on.
  double keptStage = b * double(profile.kept) / p,
         weightStage = b * double(profile.weightHeld) / p;
  double keptBytes = keptStage; // one micro-batch in flight
  double startExtra = 0;
  if (p > 1) {
    std::string why;
    const std::vector<ScheduleCache::Held> *held =
        cache.inFlight(layout.schedule, p, m, layout.virtualStages, why);
    if (!held) {
      score.error =
          "--schedule " + scheduleName(layout.schedule).str() + ": " + why;
      return score;
    }
    double chunks = chunksPerRank(layout.schedule, layout.virtualStages);
    keptBytes = 0;
    for (const ScheduleCache::Held &point : *held)
      keptBytes = std::max(
          keptBytes,
          (point.forward * keptStage + point.weight * weightStage) / chunks);
    // GPipe keeps its last micro-batch's activations whole (torchgpipe's
    // except_last); its backward starts the backwards.
    if (layout.schedule == ScheduleKind::GPipe && profile.keptWithoutRecompute)
      startExtra = std::max(0.0, b * double(profile.keptWithoutRecompute) / p -
                                     keptStage);
  }

  // Memory: a stage's model states over P, sharded over D by ZeRO stage;
  // the most kept and W-held chunks any rank's order holds (above); the
  // rest, by micro-batch size where it grows with it.
  const ModelStates &states = profile.states;
  int64_t params = states.params / p, optimizer = states.optimizerState / p;
  if (layout.zeroStage >= 1)
    optimizer /= d;
  if (layout.zeroStage >= 3)
    params /= d;
  // The profile's moments on this layout's stage, at b samples. Where the
  // schedule splits W off, the in-flight count above holds the moment's
  // micro-batch's W inputs already.
  double heldForW = splitsWeightGradient(layout.schedule) ? weightStage : 0;
  llvm::SmallVector<StepProfile::Moment, 6> moments;
  for (const StepProfile::Moment &at : profile.moments) {
    double scale = b / double(at.samples) / double(p);
    moments.push_back(
        {at.samples, at.gradients / p, int64_t(scale * double(at.kept)),
         int64_t(std::max(0.0, scale * double(at.other) - heldForW)),
         at.start});
  }
  score.breakdown =
      estimatedPeak(params, states.gradients / p, optimizer, int64_t(keptBytes),
                    int64_t(keptStage), int64_t(startExtra), moments, d, m,
                    layout.zeroStage, bucketCapBytes);
  score.peakBytes = score.breakdown.liveBytes;
  if (capBytes > 0 && score.peakBytes > capBytes) {
    score.stepSeconds = std::numeric_limits<double>::infinity();
    return score;
  }

  // The pipeline: the schedule's own orders, on stages of the work the
  // partitioner gives them (`stageScale`: the end stages' embedding and
  // head; even without it), each hop sending the layer boundary's
  // activation (or its gradient). The pipeline's ranks are N / P apart (the
  // mesh is pipeline, data, tensor), so with more devices than a node some
  // hop crosses nodes, and the slowest hop paces the pipeline.
  double pipeline = m * (forward + backward + weight);
  // The busiest rank's share of the work, over an even one.
  double busiest = 1;
  if (p > 1) {
    double transfer =
        transferSeconds(int64_t(b * double(profile.boundary)), device,
                        layout.devices() > device.devicesPerNode);
    std::vector<double> loads =
        rankLoads(layout.schedule, p, layout.virtualStages, stageScale);
    busiest = *std::max_element(loads.begin(), loads.end());
    pipeline =
        exact ? cache.makespan(layout.schedule, p, m, layout.virtualStages,
                               forward, backward, weight, transfer, stageScale)
              : ScheduleCache::makespanBound(
                    layout.schedule, p, m, layout.virtualStages, forward,
                    backward, weight, transfer, stageScale);
  }
  // The update, over the data axis with ZeRO.
  double update = profile.update / p;
  if (layout.zeroStage > 0)
    update /= d;
  // Data parallel: the rank's gradients reduced (and its parameters
  // gathered under ZeRO) over D ranks, placed as the mesh (pipeline,
  // data, tensor) places them.
  double data = 0, buckets = 0;
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
    buckets =
        bucketCopyBytes(layout.zeroStage, stageGradients, stageParams, m, d) /
        device.memoryBytesPerSecond;
    // ZeRO-2 and 3 keep gradients sharded: each micro-batch's are
    // reduce-scattered as they are made. ZeRO-1 and 2 gather the updated
    // parameters; ZeRO-3 keeps its pieces (its gathers are per use, below).
    double reduce = time(CollectiveKind::AllReduce, stageGradients);
    if (layout.zeroStage > 0) {
      int64_t scatters = layout.zeroStage == 1 ? 1 : m;
      reduce = scatters * time(CollectiveKind::ReduceScatter, stageGradients);
      if (layout.zeroStage < 3)
        reduce += time(CollectiveKind::AllGather, stageParams);
    }
    // Buckets overlap the last micro-batch's backward.
    data = std::max(0.0, reduce - (backward + weight));
    // ZeRO-3 gathers each parameter right before each op that reads it,
    // each micro-batch, overlapping the op before (exposedGatherSeconds);
    // a stage holds 1 / P of them.
    if (layout.zeroStage == 3)
      data += double(m) / double(p) *
              exposedGatherSeconds(
                  profile, b, shardThresholdBytes, [&](int64_t bytes) {
                    return time(CollectiveKind::AllGather, bytes);
                  });
  }
  score.stepSeconds = pipeline + update + buckets + data;
  // Where it goes: the profile's shares of the busiest rank's work.
  double work = m * (forward + backward + weight) * busiest;
  // (The profile's micro-batch of one sample.)
  double profileWork = profile.forwardFixed + profile.forward +
                       profile.backwardFixed + profile.backward +
                       profile.weightFixed + profile.weight;
  double share = profileWork > 0 ? work / profileWork : 0;
  score.tensorComm = profile.tensorComm * share;
  // The compute-bound share of a micro-batch of b samples' work.
  double computeSeconds = profile.computeFixed + b * profile.compute,
         busy = computeSeconds + profile.memoryFixed + b * profile.memory;
  double compute = busy > 0 ? computeSeconds / busy : 1;
  score.compute = (work - score.tensorComm) * compute;
  score.memory = (work - score.tensorComm) * (1 - compute) + update + buckets;
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
