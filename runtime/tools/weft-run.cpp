//===- weft-run.cpp - execute a weft plan ---------------------------------===//
//
// [mpirun -np P] weft-run PLAN.json [--data DIR | synthetic | text:FILE]
//          [--split train|val] [--holdout F] [--seed S] [--steps K]
//          [--threads N] [--device cpu|cuda] [--log-json FILE]
//          [--trace FILE] [--dump-outputs DIR] [--timeout S]
//          [--on-nan stop|continue]
//          [--save OUT.onnx] [--checkpoint DIR [--save-every N] [--keep K]]
//          [--resume DIR [--reshard]]
//
// A plan with P ranks (pipeline stages) runs as P MPI processes, one rank
// each; the rank holding the loss prints the log.
// Loads and validates the plan, loads weights from the model it names, and
// runs K steps, printing the loss of each and their mean. Exit status 1
// with one line naming the problem on any bad plan, weight or data file,
// a non-finite loss or a stuck peer.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"
#include "weft/runtime/Checkpoint.h"
#include "weft/runtime/Communicator.h"
#include "weft/runtime/Data.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/Files.h"
#include "weft/runtime/OnnxTensor.h"
#include "weft/runtime/PlanTasks.h"
#include "weft/runtime/TextData.h"

#include "Calibrate.h"
#include "RunOptions.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>

#include <unistd.h>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

/// Fails naming `flag` unless `path` can be created or replaced: its
/// directory exists and is writable. Checked before step 1, so that a typo
/// does not cost the run.
void checkWritable(const char *flag, const std::string &path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty())
    dir = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw Error(std::string(flag) + ": cannot write '" + path + "': '" +
                dir.string() + "' is not a directory");
  if (::access(dir.c_str(), W_OK) != 0)
    throw Error(std::string(flag) + ": cannot write '" + path + "': '" +
                dir.string() + "' is not writable");
  if (std::filesystem::is_directory(path, ec))
    throw Error(std::string(flag) + ": cannot write '" + path +
                "': it is a directory");
}

/// JSON for a loss: the number, or "nan"/"inf"/"-inf" (JSON has no
/// non-finite numbers; null would hide them).
json lossJson(std::optional<double> loss) {
  if (!loss)
    return nullptr;
  if (std::isfinite(*loss))
    return *loss;
  return std::isnan(*loss) ? "nan" : *loss > 0 ? "inf" : "-inf";
}

/// The loss: the first scalar f32 or f64 output of the plan, and the rank
/// that produces it (the last pipeline stage); rank -1 when there is none.
std::pair<std::string, int64_t> lossOutput(const Plan &plan) {
  for (const InputDesc &out : plan.outputs) {
    if (!out.shape.empty() ||
        (out.dtype != DType::F32 && out.dtype != DType::F64))
      continue;
    for (const RankPlan &rank : plan.ranks)
      for (const NamedBuffer &named : rank.outputs)
        if (named.name == out.name)
          return {out.name, rank.rank};
  }
  return {"", -1};
}

/// The measured timeline in the format of weftc --timeline: per rank,
/// consecutive instructions of one task (F<i>, B<i>, U) merged into one slice
/// on thread 0, transfers (mostly their waits) and the posts and waits of
/// collectives (category "collective_call": the time compute did not hide)
/// on thread 1; on thread 2, one slice per compute instruction named by its
/// kernel; on thread 3, each collective from its post to the end of its
/// wait (category "collective", args: axis, bytes, node).
json traceEvents(const std::vector<TraceEvent> &events) {
  json list = json::array();
  auto taskOf = [](const TraceEvent &e) {
    if (e.phase == "optimizer")
      return std::string("U");
    const char *kind = e.phase == "backward" ? "B"
                       : e.phase == "weight" ? "W"
                                             : "F";
    // With model chunks, "F1.3": chunk 1's forward of micro-batch 3, as
    // weftc --timeline names it.
    std::string chunk = e.chunk >= 0 ? std::to_string(e.chunk) + "." : "";
    return kind + chunk + std::to_string(e.microBatch);
  };
  // One instruction's slice: its name, times and rank; `args` gains the
  // step.
  auto slice = [](const TraceEvent &e, const char *category, int thread,
                  json args) {
    args["step"] = e.step;
    return json{{"name", e.kernel}, {"cat", category},        {"ph", "X"},
                {"ts", e.startUs},  {"dur", e.durationUs},    {"pid", e.rank},
                {"tid", thread},    {"args", std::move(args)}};
  };
  json open;
  for (const TraceEvent &e : events) {
    if (e.collective) {
      list.push_back(slice(
          e, "collective", 3,
          {{"node", e.name}, {"axis", e.axis}, {"bytes", e.cost.bytesRead}}));
      continue;
    }
    if (e.collectiveCall) {
      list.push_back(
          slice(e, "collective_call", 1, {{"node", e.name}, {"axis", e.axis}}));
      continue;
    }
    if (e.transfer) {
      if (e.durationUs > 0)
        list.push_back(slice(e, "transfer", 1, json::object()));
      continue;
    }
    std::string task = taskOf(e);
    std::string category = e.phase.empty() ? "forward" : e.phase;
    list.push_back(slice(e, "kernel", 2,
                         {{"node", e.name},
                          {"flops", e.cost.flops},
                          {"bytes", e.cost.bytesRead + e.cost.bytesWritten}}));
    if (!open.is_null() &&
        (open["name"] != task || open["args"]["step"] != e.step)) {
      list.push_back(open);
      open = nullptr;
    }
    if (open.is_null())
      open = {{"name", task}, {"cat", category},
              {"ph", "X"},    {"ts", e.startUs},
              {"dur", 0.0},   {"pid", e.rank},
              {"tid", 0},     {"args", {{"step", e.step}}}};
    open["dur"] = e.startUs + e.durationUs - open["ts"].get<double>();
  }
  if (!open.is_null())
    list.push_back(open);
  return list;
}

/// The backend --device names; a CUDA rank takes the GPU of its rank on
/// the node (Open MPI's local rank) modulo the GPUs there.
std::unique_ptr<Backend> makeBackend(const RunOptions &o, int64_t rank) {
  if (o.device == "cpu")
    return createCpuBackend();
#ifdef WEFT_HAVE_CUDA
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return createCudaBackend(local ? std::atoi(local) : int(rank), o.allowTf32);
#else
  throw Error("--device cuda: this weft-run was built without CUDA "
              "(WEFT_ENABLE_CUDA=OFF: no CUDA toolkit found at build time)");
#endif
}

#ifdef WEFT_HAVE_NCCL
/// True when no two ranks drive the same GPU (hostname and device): NCCL
/// refuses a communicator with two ranks on one device.
bool distinctDevices(Communicator &world, const Backend &backend) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::vector<int64_t> all = world.allGather(int64_t(
      std::hash<std::string>()(std::string(name) + "/" + backend.name())));
  std::sort(all.begin(), all.end());
  return std::adjacent_find(all.begin(), all.end()) == all.end();
}
#endif

/// Refuses, before anything runs, a compute operand whose dtype `backend`
/// has no arithmetic for (the GPU's f64), naming the instruction, kernel
/// and dtype.
void requireComputable(const RunOptions &o, const RankPlan &rank,
                       const Backend &backend) {
  for (const Instruction &inst : rank.instructions) {
    if (inst.op != "compute")
      continue;
    std::vector<int64_t> operands = inst.inputs;
    operands.insert(operands.end(), inst.outputs.begin(), inst.outputs.end());
    for (int64_t b : operands) {
      DType dtype = rank.buffers[b].dtype;
      if (!backend.computes(dtype))
        throw Error(o.plan + ": instruction '" + inst.name + "' (kernel " +
                    inst.kernel + ") has an operand of dtype " +
                    dtypeName(dtype) + "; --device " + o.device +
                    " computes in f32, bf16 and f16");
    }
  }
}

/// --view: the plan as each rank sees it (PlanView.h), unchecked, so a
/// plan the loader refuses can still be read.
int view(const RunOptions &o) {
  nlohmann::json plan =
      nlohmann::json::parse(readFile(o.plan, "the plan"), nullptr, false);
  if (plan.is_discarded())
    throw Error(o.plan + ": not valid JSON");
  std::fputs(printPlanText(planView(plan, o.viewRank, o.plan)).c_str(), stdout);
  return 0;
}

/// --explicit: the plan with its task-form programs expanded (PlanTasks.h),
/// otherwise unchecked: for tests that edit instructions, and for diffs.
int printExplicit(const RunOptions &o) {
  nlohmann::json plan =
      nlohmann::json::parse(readFile(o.plan, "the plan"), nullptr, false);
  if (plan.is_discarded())
    throw Error(o.plan + ": not valid JSON");
  std::fputs(printPlanText(explicitPlan(plan, o.plan)).c_str(), stdout);
  return 0;
}

/// weft-run --calibrate OUT.json: the device model of this machine,
/// written by rank 0 (to a temporary file renamed over OUT: never a
/// partial one).
int calibrateTo(const RunOptions &o, Communicator &world) {
  std::unique_ptr<Backend> backend = makeBackend(o, world.rank());
  backend->setThreads(o.threads);
  nlohmann::json model = calibrate(*backend, world, o.device);
  if (world.rank() != 0)
    return 0;
  std::string temporary = o.calibrate + ".tmp";
  {
    std::ofstream out(temporary);
    out << model.dump(2) << "\n";
    if (!out)
      throw Error("--calibrate: cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), o.calibrate.c_str()) != 0)
    throw Error("--calibrate: cannot write " + o.calibrate);
  std::printf("weft-run: wrote the device model %s (%s)\n", o.calibrate.c_str(),
              model["description"].get<std::string>().c_str());
  return 0;
}

int run(const RunOptions &o, Communicator &world) {
  if (!o.calibrate.empty())
    return calibrateTo(o, world);
  if (o.explicitForm)
    return printExplicit(o);
  if (o.view)
    return view(o);
  std::unique_ptr<Backend> backend = makeBackend(o, world.rank());
  // MPI moves host memory: GPU ranks stage their transfers through pinned
  // host buffers, and ranks on distinct GPUs run the collectives on NCCL.
  std::unique_ptr<Communicator> staged, nccl;
  bool gpus = o.device == "cuda" && world.size() > 1;
  if (o.stageTransfers || gpus)
    staged = createStagedCommunicator(world, *backend);
#ifdef WEFT_HAVE_NCCL
  if (gpus && !o.stageTransfers && distinctDevices(world, *backend))
    nccl = createNcclCommunicator(*staged, *backend);
#endif
  Communicator &comm = nccl ? *nccl : staged ? *staged : world;
  const char *carrier = nccl ? "nccl" : staged ? "staged" : "mpi";
  backend->setThreads(o.threads);
  // A process of a multi-process run loads what its rank needs (loadPlan's
  // onlyRank; one that fails aborts the job with its message); a single
  // process, and --check, load every rank.
  auto loadStart = std::chrono::steady_clock::now();
  Plan plan = loadPlan(
      o.plan, [&](const std::string &k) { return backend->hasKernel(k); },
      o.check            ? o.checkRank
      : world.size() > 1 ? world.rank()
                         : -1);
  if (o.check) {
    int64_t instructions = 0;
    for (const RankPlan &rank : plan.ranks) {
      if (!rank.complete)
        continue;
      requireComputable(o, rank, *backend);
      instructions += rank.instructions.size();
    }
    std::string ranks = std::to_string(plan.ranks.size()) + " rank(s)";
    if (plan.loadedRank >= 0)
      ranks = "rank " + std::to_string(plan.loadedRank) + " of " + ranks +
              " (every rank's transfers)";
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - loadStart)
                         .count();
    if (world.rank() == 0)
      std::printf("weft-run: %s: %s, %lld instruction(s): loads on "
                  "--device %s (loaded in %.2f s)\n",
                  o.plan.c_str(), ranks.c_str(),
                  static_cast<long long>(instructions), o.device.c_str(),
                  seconds);
    return 0;
  }
  int64_t ranks = plan.ranks.size();
  if (ranks != comm.size())
    throw Error(o.plan + ": ranks: the plan has " + std::to_string(ranks) +
                " rank(s), this run has " + std::to_string(comm.size()) +
                " process(es); start it with mpirun -np " +
                std::to_string(ranks) + " weft-run " + o.plan);
  int64_t rank = comm.rank();
  requireComputable(o, plan.ranks[rank], *backend);
  world.setTimeout(o.timeout);
  comm.setTimeout(o.timeout);
  // One communicator per mesh axis, for the plan's collectives.
  std::vector<int64_t> coords;
  for (const auto &[axis, size] : plan.meshAxes)
    coords.push_back(plan.ranks[rank].coord(axis));
  comm.splitMesh(plan.meshAxes, coords);
  // ZeRO's groups smaller than the data axis.
  for (const SubAxis &sub : plan.subAxes)
    comm.splitSubAxis(sub.name, sub.of, sub.size, sub.stride,
                      plan.ranks[rank].coord(sub.of));
  // The pipeline's point-to-point channels (NCCL's communicators).
  comm.connectTransfers(transferChannels(plan));
  Executor executor(plan, rank, *backend, &comm);
  executor.loadWeights();
  // Steps are numbered globally: a resumed run continues the data, the
  // optimizer's step count and the dropout RNG where the checkpoint stopped.
  int64_t first =
      o.resume.empty()
          ? 0
          : loadCheckpoint(plan, executor, rank, o.resume, o.seed, o.reshard);
  auto [lossName, lossRank] = lossOutput(plan);
  // The rank holding the loss writes the console log and --log-json.
  int64_t logRank = lossRank >= 0 ? lossRank : 0;
  bool logs = rank == logRank;

  if (!o.checkpoint.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.checkpoint, ec);
  }
  for (auto [flag, path] :
       {std::pair<const char *, std::string>{"--save", o.save},
        {"--checkpoint",
         o.checkpoint.empty() ? std::string() : o.checkpoint + "/latest"},
        {"--trace", o.trace},
        {"--log-json", o.logJson}})
    if (!path.empty())
      checkWritable(flag, path);
  std::ofstream log;
  if (logs && !o.logJson.empty()) {
    log.open(o.logJson);
    if (!log)
      throw Error("--log-json: cannot write '" + o.logJson + "'");
  }
  std::set<std::string> mine;
  for (const NamedBuffer &in : plan.ranks[rank].inputs)
    mine.insert(in.name);
  std::vector<int64_t> rankArena = comm.allGather(executor.arenaBytes());
  std::vector<int64_t> rankPeak = comm.allGather(executor.peakBytes());
  int64_t arenaMax = *std::max_element(rankArena.begin(), rankArena.end());
  int64_t peakMax = *std::max_element(rankPeak.begin(), rankPeak.end());
  std::optional<TextData> text;
  if (o.data.rfind("text:", 0) == 0)
    text.emplace(o.data.substr(5), o.holdout);
  auto stepInputs = [&](int64_t step) {
    if (text)
      return text->inputs(plan, o.tokens, o.targets, o.split, o.seed, step);
    return o.data == "synthetic" ? syntheticInputs(plan, o.seed, step)
                                 : readStepInputs(plan, o.data, step, mine);
  };
  // The console line and the --log-json record of one step (log rank).
  auto began = std::chrono::steady_clock::now();
  auto logStep = [&](int64_t step, std::optional<double> loss, double seconds) {
    double samples = plan.globalBatch / std::max(seconds, 1e-12);
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
            .count();
    int64_t done = step - first + 1;
    double eta = elapsed / done * (o.steps - done);
    std::printf("step %lld/%lld: loss %s  %.4f s  %.1f samples/s  peak %lld "
                "bytes  ETA %.1f s\n",
                (long long)step + 1, (long long)(first + o.steps),
                loss ? std::to_string(*loss).c_str() : "n/a", seconds, samples,
                (long long)peakMax, eta);
    std::fflush(stdout);
    if (log.is_open()) {
      json record = {{"step", step + 1},
                     {"loss", lossJson(loss)},
                     {"seconds", seconds},
                     {"samples_per_s", samples},
                     {"arena_bytes", arenaMax},
                     {"peak_bytes", peakMax},
                     {"rank_arena_bytes", rankArena},
                     {"rank_peak_bytes", rankPeak},
                     {"communicator", carrier},
                     {"allow_tf32", o.allowTf32}};
      // A GPU: the libraries' bytes beside the arena, and what the device
      // shows in use (arena + workspaces + the allocators' rounding).
      if (backend->deviceBytesInUse() >= 0) {
        record["workspace_bytes"] = backend->workspaceBytes();
        record["device_used_bytes"] = backend->deviceBytesInUse();
      }
      // f16: the loss scale the next step uses and the steps skipped so
      // far (GradScaler's get_scale and its skipped optimizer steps).
      if (auto scaler = executor.lossScaler()) {
        record["loss_scale"] = (*scaler)[0];
        record["skipped_steps"] = int64_t((*scaler)[2]);
      }
      log << record.dump() << std::endl;
    }
  };
  std::vector<TraceEvent> trace;
  double lossSum = 0;
  for (int64_t step = first; step < first + o.steps; ++step) {
    auto inputs = stepInputs(step);
    for (const auto &[name, bytes] : inputs)
      if (mine.count(name))
        executor.setInput(name, bytes);
    auto start = std::chrono::steady_clock::now();
    executor.run(step, o.seed, o.trace.empty() ? nullptr : &trace);
    double local =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    // A step ends when its slowest rank does.
    std::vector<int64_t> micros = comm.allGather(int64_t(local * 1e6));
    double seconds = *std::max_element(micros.begin(), micros.end()) / 1e6;
    std::optional<double> loss;
    if (logs && lossRank >= 0) {
      std::string bytes = executor.output(lossName);
      double v;
      if (bytes.size() == 8) {
        std::memcpy(&v, bytes.data(), 8);
      } else {
        float f;
        std::memcpy(&f, bytes.data(), 4);
        v = f;
      }
      loss = v;
      lossSum += v;
    }
    if (!o.dumpOutputs.empty())
      for (const NamedBuffer &out : plan.ranks[rank].outputs) {
        const BufferDesc &b = executor.outputBuffer(out.name);
        writeTensorFile(o.dumpOutputs + "/step_" + std::to_string(step) + "/" +
                            out.name + ".pb",
                        out.name, b.dtype, b.shape, executor.output(out.name));
      }
    if (logs)
      logStep(step, loss, seconds);
    // A non-finite loss poisons every later step. Stopping keeps the last
    // checkpoint good: this step's save cannot complete without this rank.
    if (loss && !std::isfinite(*loss) && o.stopOnNan)
      throw Error("step " + std::to_string(step + 1) + ": the loss is " +
                  lossJson(loss).get<std::string>() +
                  "; stopping (--on-nan=continue trains on)");
    int64_t done = step + 1 - first;
    if (!o.checkpoint.empty() &&
        ((o.saveEvery && done % o.saveEvery == 0) || done == o.steps))
      saveCheckpoint(plan, executor, comm, o.checkpoint, step + 1, o.seed,
                     o.keep);
  }
  if (logs && lossRank >= 0 && o.steps > 0)
    std::printf("mean loss over %lld steps: %.6f\n", (long long)o.steps,
                lossSum / o.steps);
  if (!o.trace.empty()) {
    // Every rank's slices, gathered into one file on rank 0.
    std::vector<std::string> parts =
        comm.gatherStrings(traceEvents(trace).dump(), 0);
    if (rank == 0) {
      json all = json::array();
      for (const std::string &part : parts)
        for (json &e : json::parse(part))
          all.push_back(std::move(e));
      std::ofstream out(o.trace);
      if (!out)
        throw Error("--trace: cannot write '" + o.trace + "'");
      out << json{{"traceEvents", all}, {"displayTimeUnit", "ms"}}.dump()
          << "\n";
    }
  }
  if (!o.save.empty()) {
    // Ranks write their tensors into one temporary file in turn (the
    // first starting from the model); the last renames it over --save.
    // Data-parallel replicas hold the same parameters: replica 0's ranks
    // write (and its batch-norm statistics, as DDP broadcasts rank 0's),
    // and with ZeRO stage 3 every rank writes its pieces.
    // A mixed-precision master copy is saved for its parameter, so a
    // sharded master (ZeRO, any stage) makes its rank a writer too.
    auto sharded = [](const RankPlan &r) {
      auto piece = [](const NamedBuffer &p) { return p.flatShard.has_value(); };
      auto masterPiece = [](const NamedBuffer &s) {
        return !s.init.empty() && s.flatShard;
      };
      return std::any_of(r.params.begin(), r.params.end(), piece) ||
             std::any_of(r.optimizerState.begin(), r.optimizerState.end(),
                         masterPiece);
    };
    std::vector<int64_t> writers;
    for (const RankPlan &r : plan.ranks)
      if (r.coord("data") == 0 || sharded(r))
        writers.push_back(r.rank);
    std::string temp = o.save + ".partial";
    for (int64_t r : writers) {
      if (r == rank)
        executor.exportModel(o.save, temp, r == writers.front(),
                             r == writers.back(),
                             plan.ranks[r].coord("data") == 0);
      comm.barrier();
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // Under mpirun every rank is a process of one MPI job; alone, weft-run
  // runs single-rank plans without MPI.
  std::unique_ptr<Communicator> comm = launchedByMpi()
                                           ? createMpiCommunicator(&argc, &argv)
                                           : createSelfCommunicator();
  std::string prefix =
      comm->size() > 1 ? "weft-run: rank " + std::to_string(comm->rank()) + ": "
                       : "weft-run: ";
  std::string message;
  try {
    return run(parseOptions(argc, argv), *comm);
  } catch (const Error &e) {
    message = prefix + e.what();
  } catch (const std::exception &e) {
    message = prefix + "internal error: " + e.what();
  }
  // One failing rank ends them all (MPI_Abort), so none waits forever on a
  // transfer from it.
  if (comm->size() > 1)
    comm->abort(message);
  std::fprintf(stderr, "%s\n", message.c_str());
  return 1;
}
