//===- weft-run.cpp - execute a weft plan ---------------------------------===//
//
// [mpirun -np P] weft-run PLAN.json [--data DIR | synthetic | text:FILE]
//          [--split train|val] [--holdout F] [--seed S] [--steps K]
//          [--threads N] [--log-json FILE] [--trace FILE]
//          [--dump-outputs DIR] [--timeout S] [--on-nan stop|continue]
//          [--save OUT.onnx] [--checkpoint DIR [--save-every N] [--keep K]]
//          [--resume DIR]
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
#include "weft/runtime/OnnxTensor.h"
#include "weft/runtime/TextData.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
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

const char *kUsage =
    "usage: weft-run PLAN.json [options]\n"
    "  --data DIR|synthetic|text:FILE\n"
    "                        inputs: DIR/step_<i>/<input>.pb (ONNX "
    "TensorProto),\n"
    "                        generated from --seed (default: synthetic), or\n"
    "                        byte-level LM windows of a text file\n"
    "  --split train|val     text: which split to read (default train)\n"
    "  --holdout F           text: the file's last fraction F is the\n"
    "                        validation split (default 0.1)\n"
    "  --text-inputs T,Y     text: the token and target inputs (default\n"
    "                        tokens,targets)\n"
    "  --seed S              seed of synthetic data and dropout (default 0)\n"
    "  --steps K             steps to run (default 1)\n"
    "  --threads N           BLAS threads (default 1)\n"
    "  --log-json FILE       one JSON object per step: step, loss, seconds,\n"
    "                        samples_per_s, arena_bytes, peak_bytes\n"
    "  --trace FILE          Chrome/Perfetto trace, one slice per instruction\n"
    "  --dump-outputs DIR    write every output as DIR/step_<i>/<name>.pb\n"
    "  --timeout S           a rank waiting on a transfer or collective for\n"
    "                        S seconds ends the job naming the peer\n"
    "                        (default 300; 0 waits forever)\n"
    "  --on-nan stop|continue  a non-finite loss stops the run with exit 1\n"
    "                        naming the step (default stop)\n"
    "  --save OUT.onnx       after the last step, write the trained model as\n"
    "                        one ONNX file (also --save-onnx)\n"
    "  --checkpoint DIR      write checkpoints to DIR (one shard per rank, a\n"
    "                        manifest, DIR/latest), after the last step and\n"
    "  --save-every N        every N steps (default 0: the last step only)\n"
    "  --keep K              keep the newest K checkpoints (default 1)\n"
    "  --resume DIR          continue from the checkpoint DIR/latest names\n"
    "                        (or DIR itself, a step_<N> directory)\n";

struct Options {
  std::string plan, data = "synthetic", logJson, trace, dumpOutputs, save,
                    checkpoint, resume;
  int64_t saveEvery = 0, keep = 1;
  TextData::Split split = TextData::Split::Train;
  double holdout = 0.1;
  std::string tokens = "tokens", targets = "targets";
  bool stopOnNan = true;
  double timeout = 300;
  uint64_t seed = 0;
  int64_t steps = 1;
  int threads = 1;
};

int64_t number(const char *flag, const char *text) {
  char *end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < 0)
    throw Error(std::string(flag) + ": '" + text +
                "' is not a non-negative integer");
  return v;
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        throw Error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    } else if (arg == "--data") {
      o.data = value();
    } else if (arg == "--split") {
      std::string split = value();
      if (split != "train" && split != "val")
        throw Error("--split: '" + split + "' is not train or val");
      o.split = split == "train" ? TextData::Split::Train
                                 : TextData::Split::Validation;
    } else if (arg == "--holdout") {
      const char *text = value();
      char *end = nullptr;
      o.holdout = std::strtod(text, &end);
      if (!*text || *end)
        throw Error(std::string("--holdout: '") + text + "' is not a number");
    } else if (arg == "--text-inputs") {
      std::string names = value();
      size_t comma = names.find(',');
      if (comma == std::string::npos || comma == 0 ||
          comma + 1 == names.size())
        throw Error("--text-inputs: '" + names +
                    "' is not TOKENS,TARGETS (two input names)");
      o.tokens = names.substr(0, comma);
      o.targets = names.substr(comma + 1);
    } else if (arg == "--timeout") {
      const char *text = value();
      char *end = nullptr;
      o.timeout = std::strtod(text, &end);
      if (!*text || *end || !(o.timeout >= 0) || std::isinf(o.timeout))
        throw Error(std::string("--timeout: '") + text +
                    "' is not a number of seconds >= 0");
    } else if (arg == "--on-nan") {
      std::string policy = value();
      if (policy != "stop" && policy != "continue")
        throw Error("--on-nan: '" + policy + "' is not stop or continue");
      o.stopOnNan = policy == "stop";
    } else if (arg == "--seed") {
      o.seed = number("--seed", value());
    } else if (arg == "--steps") {
      o.steps = number("--steps", value());
    } else if (arg == "--threads") {
      o.threads = std::max<int64_t>(1, number("--threads", value()));
    } else if (arg == "--log-json") {
      o.logJson = value();
    } else if (arg == "--trace") {
      o.trace = value();
    } else if (arg == "--dump-outputs") {
      o.dumpOutputs = value();
    } else if (arg == "--save" || arg == "--save-onnx") {
      o.save = value();
    } else if (arg == "--checkpoint") {
      o.checkpoint = value();
    } else if (arg == "--save-every") {
      o.saveEvery = number("--save-every", value());
    } else if (arg == "--keep") {
      o.keep = number("--keep", value());
      if (o.keep < 1)
        throw Error("--keep: 0 would delete every checkpoint; keep 1 or more");
    } else if (arg == "--resume") {
      o.resume = value();
    } else if (!arg.empty() && arg[0] == '-') {
      throw Error("unknown option '" + arg + "'\n" + kUsage);
    } else if (o.plan.empty()) {
      o.plan = arg;
    } else {
      throw Error("unexpected argument '" + arg + "'");
    }
  }
  if (o.plan.empty())
    throw Error(std::string("no plan given\n") + kUsage);
  if (o.saveEvery && o.checkpoint.empty())
    throw Error("--save-every needs --checkpoint DIR");
  return o;
}

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
/// on thread 0, transfers (mostly their waits) on thread 1; and, on thread 2,
/// one slice per compute instruction named by its kernel.
json traceEvents(const std::vector<TraceEvent> &events) {
  json list = json::array();
  auto taskOf = [](const TraceEvent &e) {
    if (e.phase == "optimizer")
      return std::string("U");
    return (e.phase == "backward" ? "B" : "F") + std::to_string(e.microBatch);
  };
  json open;
  for (const TraceEvent &e : events) {
    if (e.transfer) {
      if (e.durationUs > 0)
        list.push_back({{"name", e.kernel},
                        {"cat", "transfer"},
                        {"ph", "X"},
                        {"ts", e.startUs},
                        {"dur", e.durationUs},
                        {"pid", e.rank},
                        {"tid", 1},
                        {"args", {{"step", e.step}}}});
      continue;
    }
    std::string task = taskOf(e);
    std::string category = e.phase.empty() ? "forward" : e.phase;
    list.push_back({{"name", e.kernel},
                    {"cat", "kernel"},
                    {"ph", "X"},
                    {"ts", e.startUs},
                    {"dur", e.durationUs},
                    {"pid", e.rank},
                    {"tid", 2},
                    {"args", {{"node", e.name}, {"step", e.step}}}});
    if (!open.is_null() &&
        (open["name"] != task || open["args"]["step"] != e.step)) {
      list.push_back(open);
      open = nullptr;
    }
    if (open.is_null())
      open = {{"name", task},
              {"cat", category},
              {"ph", "X"},
              {"ts", e.startUs},
              {"dur", 0.0},
              {"pid", e.rank},
              {"tid", 0},
              {"args", {{"step", e.step}}}};
    open["dur"] = e.startUs + e.durationUs - open["ts"].get<double>();
  }
  if (!open.is_null())
    list.push_back(open);
  return list;
}

int run(const Options &o, Communicator &comm) {
  std::unique_ptr<Backend> backend = createCpuBackend();
  backend->setThreads(o.threads);
  Plan plan = loadPlan(
      o.plan, [&](const std::string &k) { return backend->hasKernel(k); });
  int64_t ranks = plan.ranks.size();
  if (ranks != comm.size())
    throw Error(o.plan + ": ranks: the plan has " + std::to_string(ranks) +
                " rank(s), this run has " + std::to_string(comm.size()) +
                " process(es); start it with mpirun -np " +
                std::to_string(ranks) + " weft-run " + o.plan);
  int64_t rank = comm.rank();
  comm.setTimeout(o.timeout);
  Executor executor(plan, rank, *backend, &comm);
  executor.loadWeights();
  // Steps are numbered globally: a resumed run continues the data, the
  // optimizer's step count and the dropout RNG where the checkpoint stopped.
  int64_t first =
      o.resume.empty()
          ? 0
          : loadCheckpoint(plan, executor, rank, o.resume, o.seed);
  auto [lossName, lossRank] = lossOutput(plan);
  // The rank holding the loss writes the console log and --log-json.
  int64_t logRank = lossRank >= 0 ? lossRank : 0;
  bool logs = rank == logRank;

  if (!o.checkpoint.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.checkpoint, ec);
  }
  for (auto [flag, path] : {std::pair<const char *, std::string>{
                                "--save", o.save},
                            {"--checkpoint", o.checkpoint.empty()
                                                 ? std::string()
                                                 : o.checkpoint + "/latest"},
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
                                 : readStepInputs(plan, o.data, step);
  };
  // The console line and the --log-json record of one step (log rank).
  auto began = std::chrono::steady_clock::now();
  std::ofstream *logFile = log.is_open() ? &log : nullptr;
  auto logStep = [&](int64_t step, std::optional<double> loss,
                     double seconds) {
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
    if (logFile)
      *logFile << json{{"step", step + 1},
                       {"loss", lossJson(loss)},
                       {"seconds", seconds},
                       {"samples_per_s", samples},
                       {"arena_bytes", arenaMax},
                       {"peak_bytes", peakMax},
                       {"rank_arena_bytes", rankArena},
                       {"rank_peak_bytes", rankPeak}}
                      .dump()
               << std::endl;
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
    double seconds =
        *std::max_element(micros.begin(), micros.end()) / 1e6;
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
    // Ranks write their tensors into one temporary file in turn (rank 0
    // starting from the model); the last renames it over --save.
    std::string temp = o.save + ".partial";
    for (int64_t r = 0; r < ranks; ++r) {
      if (r == rank)
        executor.exportModel(o.save, temp, r == 0, r == ranks - 1);
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
  std::string prefix = comm->size() > 1
                           ? "weft-run: rank " + std::to_string(comm->rank()) +
                                 ": "
                           : "weft-run: ";
  std::string message;
  try {
    return run(parse(argc, argv), *comm);
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
