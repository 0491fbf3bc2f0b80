//===- weft-run.cpp - execute a weft plan ---------------------------------===//
//
// weft-run PLAN.json [--data DIR | --data synthetic] [--seed S] [--steps K]
//          [--threads N] [--log-json FILE] [--trace FILE] [--dump-outputs DIR]
//
// Loads and validates the plan, loads weights from the model it names, and
// runs K steps, printing the loss of each. Exit status 1 with one line
// naming the problem on any bad plan, weight or data file.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"
#include "weft/runtime/Data.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/OnnxTensor.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

const char *kUsage =
    "usage: weft-run PLAN.json [options]\n"
    "  --data DIR|synthetic  inputs: DIR/step_<i>/<input>.pb (ONNX "
    "TensorProto)\n"
    "                        or generated from --seed (default: synthetic)\n"
    "  --seed S              seed of synthetic data and dropout (default 0)\n"
    "  --steps K             steps to run (default 1)\n"
    "  --threads N           BLAS threads (default 1)\n"
    "  --log-json FILE       one JSON object per step: step, loss, seconds,\n"
    "                        samples_per_s, arena_bytes, peak_bytes\n"
    "  --trace FILE          Chrome/Perfetto trace, one slice per instruction\n"
    "  --dump-outputs DIR    write every output as DIR/step_<i>/<name>.pb\n"
    "  --save OUT.onnx       after the last step, write the trained model\n"
    "                        (and optimizer state to OUT.onnx.optim)\n"
    "  --resume CKPT.onnx    continue from a checkpoint written by --save\n";

struct Options {
  std::string plan, data = "synthetic", logJson, trace, dumpOutputs, save,
                    resume;
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
    } else if (arg == "--save") {
      o.save = value();
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
  return o;
}

/// The loss: the first scalar float output.
std::optional<double> lossOf(const Plan &plan, const Executor &executor) {
  for (const InputDesc &out : plan.outputs) {
    if (!out.shape.empty() || out.dtype != DType::F32)
      continue;
    float v;
    std::string bytes = executor.output(out.name);
    std::memcpy(&v, bytes.data(), 4);
    return v;
  }
  return std::nullopt;
}

void writeTrace(const std::string &path,
                const std::vector<TraceEvent> &events) {
  json list = json::array();
  for (const TraceEvent &e : events)
    list.push_back({{"name", e.kernel},
                    {"cat", "compute"},
                    {"ph", "X"},
                    {"ts", e.startUs},
                    {"dur", e.durationUs},
                    {"pid", e.rank},
                    {"tid", 0},
                    {"args", {{"node", e.name}, {"step", e.step}}}});
  std::ofstream out(path);
  if (!out)
    throw Error("--trace: cannot write '" + path + "'");
  out << json{{"traceEvents", list}, {"displayTimeUnit", "ms"}}.dump() << "\n";
}

int run(const Options &o) {
  std::unique_ptr<Backend> backend = createCpuBackend();
  backend->setThreads(o.threads);
  Plan plan = loadPlan(
      o.plan, [&](const std::string &k) { return backend->hasKernel(k); });
  if (plan.ranks.size() != 1)
    throw Error(o.plan + ": ranks: " + std::to_string(plan.ranks.size()) +
                " ranks; this weft-run executes single-rank plans");
  Executor executor(plan, 0, *backend);
  executor.loadWeights();
  // Steps are numbered globally: a resumed run continues the data, the
  // optimizer's step count and the dropout RNG where the checkpoint stopped.
  int64_t first = o.resume.empty() ? 0 : executor.loadCheckpoint(o.resume);

  std::ofstream log;
  if (!o.logJson.empty()) {
    log.open(o.logJson);
    if (!log)
      throw Error("--log-json: cannot write '" + o.logJson + "'");
  }
  std::vector<TraceEvent> trace;
  auto began = std::chrono::steady_clock::now();
  for (int64_t step = first; step < first + o.steps; ++step) {
    auto inputs = o.data == "synthetic" ? syntheticInputs(plan, o.seed, step)
                                        : readStepInputs(plan, o.data, step);
    for (const auto &[name, bytes] : inputs)
      executor.setInput(name, bytes);
    auto start = std::chrono::steady_clock::now();
    executor.run(step, o.seed, o.trace.empty() ? nullptr : &trace);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::optional<double> loss = lossOf(plan, executor);
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
                (long long)executor.peakBytes(), eta);
    std::fflush(stdout);
    if (log.is_open())
      log << json{{"step", step + 1},
                  {"loss", loss ? json(*loss) : json(nullptr)},
                  {"seconds", seconds},
                  {"samples_per_s", samples},
                  {"arena_bytes", executor.arenaBytes()},
                  {"peak_bytes", executor.peakBytes()}}
                 .dump()
          << std::endl;
    if (!o.dumpOutputs.empty())
      for (const InputDesc &out : plan.outputs)
        writeTensorFile(o.dumpOutputs + "/step_" + std::to_string(step) + "/" +
                            out.name + ".pb",
                        out.name, out.dtype, out.shape,
                        executor.output(out.name));
  }
  if (!o.trace.empty())
    writeTrace(o.trace, trace);
  if (!o.save.empty())
    executor.saveCheckpoint(o.save, first + o.steps);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(parse(argc, argv));
  } catch (const Error &e) {
    std::fprintf(stderr, "weft-run: %s\n", e.what());
  } catch (const std::exception &e) {
    std::fprintf(stderr, "weft-run: internal error: %s\n", e.what());
  }
  return 1;
}
