//===- AutoParallel.cpp - weftc --auto-parallel: the layout search --------===//

#include "AutoParallel.h"

#include "LayoutEstimate.h"
#include "PipelineReport.h"

#include "weft/Analysis/MemoryPlan.h"
#include "weft/Analysis/PipelineSimulation.h"
#include "weft/Analysis/RepeatedLayers.h"
#include "weft/Analysis/TaskOrder.h"
#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <queue>

using namespace mlir;

namespace {
/// The divisors of n, ascending.
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> result;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      result.push_back(d);
  return result;
}

/// The step simulated with the collectives `free` selects taking no time.
double stepWithout(std::vector<std::vector<weft::SimOp>> programs,
                   const weft::DeviceModel &device,
                   llvm::function_ref<bool(Operation *)> free) {
  for (std::vector<weft::SimOp> &program : programs)
    for (weft::SimOp &op : program)
      if (op.kind == weft::SimOp::Kind::PostCollective && op.op && free(op.op))
        op.seconds = 0;
  return weft::simulatePipeline(programs, device).stepSeconds;
}
} // namespace

std::string weft::Layout::flags() const {
  std::string text;
  auto add = [&](llvm::StringRef flag, const llvm::Twine &value) {
    text += (text.empty() ? "--" : " --") + flag.str() + "=" + value.str();
  };
  if (pipeline > 1)
    add("pipeline-parallel", llvm::Twine(pipeline));
  if (tensor > 1)
    add("tensor-parallel", llvm::Twine(tensor));
  if (data > 1)
    add("data-parallel", llvm::Twine(data));
  add("microbatches", llvm::Twine(microbatches));
  if (pipeline > 1) {
    add("schedule", scheduleName(schedule));
    if (schedule == ScheduleKind::Interleaved)
      add("virtual-stages", llvm::Twine(virtualStages));
  }
  add("recompute", recompute);
  if (recompute == "full")
    add("recompute-granularity", granularity);
  if (sequenceParallel)
    text += " --sequence-parallel";
  if (zeroStage > 0)
    add("zero-stage", llvm::Twine(zeroStage));
  if (flashAttention)
    text += " --flash-attention";
  return text;
}

std::string weft::Layout::brief() const {
  std::string text = llvm::formatv("P{0} T{1} D{2} M{3}", pipeline, tensor,
                                   data, microbatches);
  if (pipeline > 1) {
    text += " " + scheduleName(schedule).str();
    if (schedule == ScheduleKind::Interleaved)
      text += "x" + std::to_string(virtualStages);
  }
  text += " " + (recompute == "full" ? "full-" + granularity : recompute);
  if (sequenceParallel)
    text += " sp";
  if (zeroStage > 0)
    text += " zero" + std::to_string(zeroStage);
  if (flashAttention)
    text += " flash";
  return text;
}

bool weft::Layout::operator==(const Layout &other) const {
  // Equal when they compile alike: the flags say everything that matters.
  return flags() == other.flags();
}

std::vector<weft::Layout> weft::enumerateLayouts(const SearchSpace &space) {
  std::vector<Layout> layouts;
  const char *recomputes[][2] = {{"none", "stage"},
                                 {"selective", "stage"},
                                 {"full", "stage"},
                                 {"full", "layer"}};
  for (int64_t tensor : divisors(space.devices)) {
    if (tensor > space.maxTensor)
      continue;
    for (int64_t pipeline : divisors(space.devices / tensor)) {
      int64_t data = space.devices / tensor / pipeline;
      if (space.batch % data != 0)
        continue;
      // Each schedule with its chunks per rank; one stage has no schedule.
      std::vector<std::pair<ScheduleKind, int64_t>> schedules = {
          {ScheduleKind::OneFOneB, 2}};
      if (pipeline > 1)
        schedules = {
            {ScheduleKind::GPipe, 2},       {ScheduleKind::OneFOneB, 2},
            {ScheduleKind::Interleaved, 2}, {ScheduleKind::Interleaved, 3},
            {ScheduleKind::ZBH1, 2},        {ScheduleKind::ZBH2, 2},
            {ScheduleKind::ZBV, 2}};
      llvm::erase_if(schedules, [&](auto &schedule) {
        int64_t stages =
            pipeline * chunksPerRank(schedule.first, schedule.second);
        return space.maxStages > 0 && stages > space.maxStages;
      });
      for (int64_t microbatches : divisors(space.batch / data))
        for (auto [schedule, chunks] : schedules)
          for (auto [recompute, granularity] : recomputes)
            for (bool sequence : {false, true}) {
              if (sequence && tensor == 1)
                continue;
              for (int64_t zero = 0; zero <= (data > 1 ? 3 : 0); ++zero)
                for (bool flash : {false, true}) {
                  // Flash attention recomputes core attention itself:
                  // selective recompute finds none left to recompute.
                  if (flash && recompute == llvm::StringRef("selective"))
                    continue;
                  Layout layout;
                  layout.pipeline = pipeline;
                  layout.tensor = tensor;
                  layout.data = data;
                  layout.microbatches = microbatches;
                  layout.schedule = schedule;
                  layout.virtualStages = chunks;
                  layout.recompute = recompute;
                  layout.granularity = granularity;
                  layout.sequenceParallel = sequence;
                  layout.zeroStage = zero;
                  layout.flashAttention = flash;
                  layouts.push_back(std::move(layout));
                }
            }
    }
  }
  return layouts;
}

llvm::StringRef weft::LayoutScore::bound() const {
  std::pair<double, llvm::StringRef> parts[] = {{compute, "compute"},
                                                {memory, "memory"},
                                                {bubble, "bubble"},
                                                {tensorComm, "tensor comm"},
                                                {dataComm, "data comm"}};
  return std::max_element(std::begin(parts), std::end(parts),
                          [](auto &a, auto &b) { return a.first < b.first; })
      ->second;
}

weft::LayoutScore weft::scoreLayout(const Layout &layout, llvm::StringRef model,
                                    llvm::StringRef source, bool onnxText,
                                    const ImportOptions &importOptions,
                                    PlanPipelineOptions &pipelineOptions,
                                    const DeviceModel &device, bool sixteenBit,
                                    StepProfile *profile,
                                    llvm::StringRef imported) {
  LayoutScore score;
  score.layout = layout;
  auto keep = [&](const llvm::Twine &message) {
    if (score.error.empty())
      score.error = message.str();
  };
  if (failed(pipelineOptions.validate(keep)))
    return score;
  MLIRContext context;
  context.printOpOnDiagnostic(false);
  // Every diagnostic is kept here: a search prints one table, not the
  // errors of the layouts it rejects.
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
      keep(diagnostic.str());
    return success();
  });
  OwningOpRef<ModuleOp> module;
  if (imported.empty()) {
    module = importONNX(model, source, onnxText, importOptions, &context);
  } else {
    context.loadDialect<WeftDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(imported, &context);
  }
  if (!module) {
    keep("the import failed");
    return score;
  }
  std::optional<SimResult> prediction;
  pipelineOptions.prediction = &prediction;
  PassManager pm(&context);
  buildPlanPipeline(pm, pipelineOptions);
  if (failed(pm.run(*module))) {
    // A pass that rejects a layout says why. IR that no longer verifies
    // after a failed run is taken for a weft bug (a pass made it, or
    // failed halfway through a rewrite: either needs fixing), which must
    // not pass for a layout the compiler rejects.
    if (failed(verify(*module)))
      score.error = (kInvalidIR + ": " + score.error).str();
    keep("the compile failed");
    return score;
  }
  // The step as weftc's stage table predicts it.
  std::vector<std::vector<SimOp>> programs = stagePrograms(*module, device);
  SimResult step =
      prediction ? std::move(*prediction) : simulatePipeline(programs, device);
  if (!step.completed) {
    keep("the simulated step deadlocks: " + step.deadlock);
    return score;
  }
  score.stepSeconds = step.stepSeconds;
  StepUtilization use =
      stepUtilization(*module, step.stepSeconds, device, sixteenBit);
  score.mfu = use.mfu;
  score.hfu = use.hfu;

  // Memory: each rank's arena, as the plan allocates it.
  SmallVector<func::FuncOp> ranks = rankFunctions(*module);
  MemoryPlans plans;
  plans.planAll(ranks);
  for (auto [rank, func] : llvm::enumerate(ranks))
    if (plans.of(func).arenaBytes > score.peakBytes || rank == 0) {
      score.peakBytes = plans.of(func).arenaBytes;
      score.peakRank = rank;
    }
  score.breakdown =
      breakDownMemory(ranks[score.peakRank], plans.of(ranks[score.peakRank]));

  // Where the critical rank's step goes.
  size_t critical =
      std::max_element(step.busySeconds.begin(), step.busySeconds.end()) -
      step.busySeconds.begin();
  // The simulator's compute ops, so that the parts add up to its step.
  for (const SimOp &op : programs[critical]) {
    if (op.kind != SimOp::Kind::Compute || !op.op)
      continue;
    Roofline roofline = opRoofline(op.op, device);
    (roofline.memoryBound() ? score.memory : score.compute) += op.seconds;
  }
  int64_t tensorAxis = -1;
  if (FailureOr<std::optional<DeviceMesh>> mesh = getDeviceMesh(*module);
      succeeded(mesh) && *mesh)
    tensorAxis = (*mesh)->axisIndex("tensor");
  if (layout.tensor > 1)
    score.tensorComm =
        step.stepSeconds - stepWithout(programs, device, [&](Operation *op) {
          return collectiveOverAxis(op, tensorAxis);
        });
  if (layout.data > 1)
    score.dataComm =
        step.stepSeconds - stepWithout(programs, device, [&](Operation *op) {
          return !collectiveOverAxis(op, tensorAxis);
        });
  score.bubble = std::max(0.0, step.stepSeconds - step.busySeconds[critical] -
                                   score.tensorComm - score.dataComm);
  if (profile)
    *profile = profileStep(*module, step, device, plans.of(ranks[0]),
                           score.peakRank == 0
                               ? score.breakdown
                               : breakDownMemory(ranks[0], plans.of(ranks[0])));
  return score;
}

std::string weft::importShortModel(llvm::StringRef model,
                                   llvm::StringRef source, bool onnxText,
                                   const ImportOptions &importOptions,
                                   int64_t layers, std::string &error) {
  MLIRContext context;
  context.printOpOnDiagnostic(false);
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diagnostic) {
    if (error.empty() && diagnostic.getSeverity() == DiagnosticSeverity::Error)
      error = diagnostic.str();
    return success();
  });
  OwningOpRef<ModuleOp> module =
      importONNX(model, source, onnxText, importOptions, &context);
  if (!module) {
    if (error.empty())
      error = "the import failed";
    return {};
  }
  if (!truncateRepeatedLayers(*module->getOps<func::FuncOp>().begin(),
                              layers)) {
    error = "the model has no repeated layer to keep " +
            std::to_string(layers) + " copies of";
    return {};
  }
  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  if (failed(writeBytecodeToFile(*module, os))) {
    error = "the cut model does not write as bytecode";
    return {};
  }
  return bytecode;
}

weft::SearchResult weft::rankLayouts(std::vector<LayoutScore> scores,
                                     int64_t capBytes) {
  SearchResult result;
  auto fits = [&](const LayoutScore &s) {
    return s.compiled() && (capBytes <= 0 || s.peakBytes <= capBytes);
  };
  std::stable_sort(scores.begin(), scores.end(),
                   [&](const LayoutScore &a, const LayoutScore &b) {
                     if (fits(a) != fits(b))
                       return fits(a);
                     if (a.compiled() != b.compiled())
                       return a.compiled();
                     // Compiled figures before estimated ones: the
                     // estimate only orders what was not compiled.
                     if (a.estimated != b.estimated)
                       return b.estimated;
                     if (a.stepSeconds != b.stepSeconds)
                       return a.stepSeconds < b.stepSeconds;
                     return a.peakBytes < b.peakBytes;
                   });
  for (const LayoutScore &s : scores) {
    result.fitting += fits(s);
    result.failed += !s.compiled();
  }
  result.scores = std::move(scores);
  return result;
}

namespace {
/// The one-stage layout whose profile estimates `layout`: its T, sequence
/// parallelism, recompute and flash attention; P = D = M = 1.
weft::Layout classOf(const weft::Layout &layout) {
  weft::Layout one;
  one.tensor = layout.tensor;
  one.sequenceParallel = layout.sequenceParallel;
  one.recompute = layout.recompute;
  one.granularity = layout.granularity;
  one.flashAttention = layout.flashAttention;
  return one;
}

/// Every layout estimated from its class's profile: each class compiled
/// once, at micro-batch size 1, the classes on all cores (`profiled`
/// counts them). The pipelines' simulations are few: every layout's step
/// is first bounded (its makespan at ScheduleCache::makespanBound), then
/// the layouts are simulated in the bounds' order until the next bound is
/// no faster than the `exact`-th fastest simulated step (branch and
/// bound). The rest keep their bounds, which rank them after those
/// `exact`, as their estimates would; `timed` counts the simulated.
/// --explain's layout is always simulated.
std::vector<weft::LayoutScore>
estimateLayouts(const std::vector<weft::Layout> &layouts,
                const weft::SearchRequest &request, weft::CompileLayout compile,
                int64_t exact, int64_t &profiled, int64_t &timed) {
  using namespace weft;
  struct Class {
    Layout layout;
    LayoutScore score;
    StepProfile profile;
  };
  std::map<std::string, size_t> classIndex;
  std::vector<Class> classes;
  std::vector<size_t> classOfLayout;
  for (const Layout &layout : layouts) {
    Layout key = classOf(layout);
    auto [it, fresh] = classIndex.try_emplace(key.flags(), classes.size());
    if (fresh)
      classes.push_back({key, {}, {}});
    classOfLayout.push_back(it->second);
  }
  // Layer repetition: each class compiled on its first kShortLayers and
  // kShortLayers + 1 layers, the profile extrapolated to the model's
  // (every figure of a step grows by one layer's share per layer); the
  // whole model when it has few layers, when asked, or when it cannot be
  // cut.
  int64_t layers = request.space.maxStages;
  bool shortened = request.shortProfiles && layers >= 3 * kShortLayers;
  // Each at micro-batch sizes 1 and 2 (fitPerSample), when a layout's
  // micro-batch can hold 2 samples.
  int64_t sizes = request.space.batch >= 2 ? 2 : 1;
  llvm::StdThreadPool pool(llvm::hardware_concurrency());
  // [class][layers: kShortLayers + k, or the whole model][samples - 1]
  std::vector<std::array<std::array<StepProfile, 2>, 2>> profiles(
      classes.size());
  std::vector<std::array<std::array<LayoutScore, 2>, 2>> compiled(
      classes.size());
  auto profileClass = [&](size_t i, int64_t k, int64_t cut) {
    for (int64_t n = 0; n < sizes; ++n)
      pool.async([&, i, k, n, cut] {
        compiled[i][k][n] =
            compile(classes[i].layout, n + 1, &profiles[i][k][n], cut);
      });
  };
  // The profile of class i from the compiles at layer count k, or false.
  auto fitted = [&](size_t i, int64_t k, StepProfile &out) {
    if (!compiled[i][k][0].compiled())
      return false;
    out = sizes == 2 && compiled[i][k][1].compiled()
              ? fitPerSample(profiles[i][k][0], profiles[i][k][1])
              : profiles[i][k][0];
    return true;
  };
  std::vector<size_t> whole; // the classes profiled on the whole model
  if (shortened) {
    for (size_t i = 0; i < classes.size(); ++i)
      for (int64_t k : {0, 1})
        profileClass(i, k, kShortLayers + k);
    pool.wait();
    for (auto [i, c] : llvm::enumerate(classes)) {
      StepProfile fewer, more;
      if (!fitted(i, 0, fewer) || !fitted(i, 1, more)) {
        whole.push_back(i);
        continue;
      }
      c.score = compiled[i][1][0];
      c.profile = extrapolateProfile(fewer, more, kShortLayers, layers);
    }
  } else {
    for (size_t i = 0; i < classes.size(); ++i)
      whole.push_back(i);
  }
  for (size_t i : whole)
    profileClass(i, 0, 0);
  pool.wait();
  for (size_t i : whole) {
    classes[i].score = compiled[i][0][0];
    fitted(i, 0, classes[i].profile);
  }
  profiled = classes.size();
  // A recompute class's kept activations without it, for GPipe's last
  // micro-batch.
  for (Class &c : classes) {
    if (c.layout.recompute == "none")
      continue;
    Layout plain = c.layout;
    plain.recompute = "none";
    plain.granularity = Layout().granularity;
    if (auto it = classIndex.find(plain.flags()); it != classIndex.end())
      c.profile.keptWithoutRecompute = classes[it->second].profile.kept;
  }

  ScheduleCache cache;
  // Each stage count's stages' work over an even stage's, as the
  // partitioner cuts the model's segments (empty: even).
  std::map<int64_t, std::vector<double>> scales;
  auto estimate = [&](size_t i, bool simulated) {
    const Layout &layout = layouts[i];
    int64_t stages =
        layout.pipeline * chunksPerRank(layout.schedule, layout.virtualStages);
    auto [it, fresh] = scales.try_emplace(stages);
    if (fresh && stages > 1)
      for (double share : stageShares(request.segments, stages))
        it->second.push_back(share * double(stages));
    return estimateLayout(
        layout, classes[classOfLayout[i]].profile, request.space.batch,
        request.device, request.sixteenBit, request.capBytes, cache, simulated,
        it->second, request.shardThresholdBytes, request.bucketCapBytes);
  };
  std::vector<LayoutScore> scores;
  std::vector<size_t> timeable;
  for (size_t i = 0; i < layouts.size(); ++i) {
    const LayoutScore &profile = classes[classOfLayout[i]].score;
    if (!profile.compiled()) {
      LayoutScore failed;
      failed.layout = layouts[i];
      failed.error = profile.error;
      scores.push_back(failed);
      continue;
    }
    scores.push_back(estimate(i, /*simulated=*/false));
    if (scores.back().compiled() && std::isfinite(scores.back().stepSeconds))
      timeable.push_back(i);
  }
  llvm::stable_sort(timeable, [&](size_t a, size_t b) {
    return scores[a].stepSeconds < scores[b].stepSeconds;
  });
  std::priority_queue<double> fastest; // the `exact` fastest simulated
  for (size_t i : timeable) {
    if (int64_t(fastest.size()) >= exact &&
        scores[i].stepSeconds >= fastest.top())
      break;
    scores[i] = estimate(i, /*simulated=*/true);
    ++timed;
    fastest.push(scores[i].stepSeconds);
    if (int64_t(fastest.size()) > exact)
      fastest.pop();
  }
  if (request.explain)
    for (size_t i = 0; i < layouts.size(); ++i)
      if (layouts[i] == *request.explain && scores[i].compiled())
        scores[i] = estimate(i, /*simulated=*/true);
  return scores;
}

} // namespace

/// While none of the confirming compiles fits the cap, the search goes on
/// to this many times --confirm of them (searchLayouts).
static constexpr int64_t kConfirmWhileNone = 4;

llvm::Expected<weft::Layout> weft::searchLayouts(const SearchRequest &request,
                                                 CompileLayout compile,
                                                 llvm::raw_ostream &os) {
  auto start = std::chrono::steady_clock::now();
  std::vector<Layout> layouts = enumerateLayouts(request.space);
  if (request.explain && !llvm::is_contained(layouts, *request.explain))
    layouts.push_back(*request.explain);
  bool estimate =
      request.mode == SearchMode::Estimate ||
      (request.mode == SearchMode::Auto && layouts.size() > kCompileEach);
  std::vector<LayoutScore> scores;
  int64_t profiled = 0, timed = 0;
  if (estimate) {
    // Exact estimates for every row the table and the confirmation can
    // reach: the confirmed ones (up to kConfirmWhileNone times --confirm),
    // then the top K. Beyond them rows keep their bounds, an order no
    // confirmation should follow.
    scores = estimateLayouts(layouts, request, compile,
                             kConfirmWhileNone * request.confirm + request.top,
                             profiled, timed);
  } else {
    scores.reserve(layouts.size());
    for (const Layout &layout : layouts)
      scores.push_back(compile(layout, 0, nullptr, 0));
  }
  SearchResult result = rankLayouts(std::move(scores), request.capBytes);
  auto fits = [&](const LayoutScore &s) {
    return s.compiled() &&
           (request.capBytes <= 0 || s.peakBytes <= request.capBytes);
  };
  // Estimated: compile candidates in the estimate's order while the next
  // is estimated faster than the fastest compiled one that fits (at most
  // request.confirm, and while none of them fits, up to kConfirmWhileNone
  // times as many: the estimate's peaks are optimistic, and a plan must be
  // a compiled layout that fits), and the hand-made layout, to place it
  // exactly. Compiled as many at a time as there are cores, so a round may
  // compile one that the round's others would have ruled out.
  int64_t compiledCount = 0;
  if (estimate) {
    double fastest = std::numeric_limits<double>::infinity();
    llvm::StdThreadPool pool(llvm::hardware_concurrency());
    size_t width = std::max(1u, pool.getMaxConcurrency());
    std::vector<LayoutScore> &all = result.scores;
    for (size_t next = 0; next < all.size();) {
      std::vector<size_t> round;
      int64_t limit = std::isfinite(fastest)
                          ? request.confirm
                          : kConfirmWhileNone * request.confirm;
      for (; next < all.size() && round.size() < width; ++next) {
        bool mine = request.explain && all[next].layout == *request.explain;
        if (mine ||
            (fits(all[next]) && compiledCount + int64_t(round.size()) < limit &&
             all[next].stepSeconds < fastest))
          round.push_back(next);
      }
      for (size_t i : round)
        pool.async([&all, compile, i] {
          all[i] = compile(all[i].layout, 0, nullptr, 0);
        });
      pool.wait();
      for (size_t i : round) {
        ++compiledCount;
        if (fits(all[i]))
          fastest = std::min(fastest, all[i].stepSeconds);
      }
    }
    result = rankLayouts(std::move(result.scores), request.capBytes);
  }
  for (LayoutScore &s : result.scores)
    if (s.compiled())
      s.samplesPerSecond = double(request.space.batch) / s.stepSeconds;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  os << llvm::formatv(
      "auto-parallel: {0} layouts of {1} devices{9}, global "
      "batch {2}, on {3}, {4}: {5} fit, {6} do not compile; {7}"
      "searched in {8:f1} s\n",
      result.scores.size(), request.space.devices, request.space.batch,
      request.device.name,
      request.capBytes > 0
          ? llvm::formatv("{0} bytes a device", request.capBytes).str()
          : std::string("no memory cap"),
      result.fitting, result.failed,
      estimate ? llvm::formatv("estimated from {0} one-stage profiles ({1} "
                               "pipelines simulated, the rest bounded), {2} "
                               "compiled; ",
                               profiled, timed, compiledCount)
                     .str()
               : std::string(),
      seconds,
      request.space.maxStages > 0
          ? llvm::formatv(" (at most {0} stages: the model repeats a layer "
                          "{0} times)",
                          request.space.maxStages)
                .str()
          : std::string());
  printCompileFailures(result.scores, os);
  int64_t shown = std::min<int64_t>(request.top, result.fitting);
  printLayoutTable(llvm::ArrayRef(result.scores).take_front(shown), os);
  // The plan is a compiled layout's, the fastest that fits (compiled rows
  // rank first); with nothing compiled (--confirm 0), the fastest
  // estimate's.
  auto best = llvm::find_if(result.scores, fits);
  auto slowest = [](const LayoutScore &s) {
    return 1e3 *
           std::max({s.compute, s.memory, s.bubble, s.tensorComm, s.dataComm});
  };
  if (request.explain) {
    auto mine = llvm::find_if(result.scores, [&](const LayoutScore &s) {
      return s.layout == *request.explain;
    });
    int64_t place = mine - result.scores.begin();
    os << "yours: " << mine->layout.flags() << "\n";
    if (!mine->compiled())
      os << "  does not compile: " << mine->error << "\n";
    else if (!fits(*mine))
      os << llvm::formatv("  does not fit: its peak is {0} bytes (rank {1}), "
                          "over the cap by {2}\n",
                          mine->peakBytes, mine->peakRank,
                          mine->peakBytes - request.capBytes);
    if (mine->compiled()) {
      printLayoutTable(llvm::ArrayRef(*mine), os, place + 1);
      if (best != result.scores.end())
        os << llvm::formatv("  {0:f2}x the best's step; bound: {1} ({2:f2} "
                            "ms), the best's: {3} ({4:f2} ms)\n",
                            mine->stepSeconds / best->stepSeconds,
                            mine->bound(), slowest(*mine), best->bound(),
                            slowest(*best));
    }
  }
  if (best == result.scores.end())
    return llvm::createStringError(nothingFits(result, request.capBytes));
  os << "best: " << best->layout.flags() << "\n";
  return best->layout;
}
