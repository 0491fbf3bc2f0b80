//===- StreamOrderTest.cpp - the executor's stream hand-offs --------------===//
//
// On the CPU the executor's events are no-ops, so the order it records and
// waits them in is checked here with a backend that logs them: before a
// transfer or collective is posted, an event on the compute stream that
// the comm stream waits for (the buffer's producer comes first); after
// each wait, an event on the comm stream the compute stream waits for (the
// consumers come after); with a trace, an event before and after each
// kernel and no synchronisation between instructions.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Communicator.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/Plan.h"

#include "../../../runtime/kernels/Kernel.h"

#include "PlanJson.h"

#include <gtest/gtest.h>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

/// The CPU backend, logging stream operations and launches.
class LoggingBackend final : public Backend {
public:
  std::vector<std::string> log;

  std::string name() const override { return "logging"; }
  void *allocateArena(int64_t bytes) override {
    return cpu->allocateArena(bytes);
  }
  void freeArena(void *arena) override { cpu->freeArena(arena); }
  void upload(void *device, const void *host, int64_t bytes) override {
    cpu->upload(device, host, bytes);
  }
  void download(void *host, const void *device, int64_t bytes) override {
    cpu->download(host, device, bytes);
  }
  bool hasKernel(const std::string &kernel) const override {
    return cpu->hasKernel(kernel);
  }
  void launch(const KernelCall &call) override {
    log.push_back("launch " + call.kernel);
    cpu->launch(call);
  }
  /// The kernel this backend launches runs of together (none when empty).
  std::string grouped;
  bool launchesGrouped(const std::string &kernel) const override {
    return kernel == grouped;
  }
  void launchGroup(const std::vector<KernelCall> &calls) override {
    std::string entry = "launch group";
    for (const KernelCall &call : calls)
      entry += " " + call.kernel + "@" + std::to_string(call.ctx.instruction);
    log.push_back(entry);
    for (const KernelCall &call : calls)
      cpu->launch(call);
  }
  void synchronize() override { log.push_back("synchronize"); }
  void setThreads(int threads) override { cpu->setThreads(threads); }
  std::unique_ptr<Event> createEvent() override { return cpu->createEvent(); }
  void record(Event &event, Stream stream) override {
    log.push_back(std::string("record ") + streamName(stream));
    cpu->record(event, stream);
  }
  void wait(Stream stream, const Event &) override {
    log.push_back(std::string("wait ") + streamName(stream));
  }
  double elapsedUs(const Event &from, const Event &to) override {
    return cpu->elapsedUs(from, to);
  }
  void *allocateHost(int64_t bytes) override {
    return cpu->allocateHost(bytes);
  }
  void freeHost(void *host) override { cpu->freeHost(host); }

private:
  static const char *streamName(Stream s) {
    return s == Stream::Compute ? "compute" : "comm";
  }
  std::unique_ptr<Backend> cpu = createCpuBackend();
};

/// A group of one: collectives copy, posts and waits complete at once.
class LoopbackCommunicator final : public Communicator {
public:
  std::vector<std::string> &log;
  explicit LoopbackCommunicator(std::vector<std::string> &log) : log(log) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  void isend(const void *, int64_t, int, int64_t) override {}
  void irecv(void *, int64_t, int, int64_t) override {}
  void wait(int64_t) override {}
  void splitMesh(const std::vector<std::pair<std::string, int64_t>> &,
                 const std::vector<int64_t> &) override {}
  void splitSubAxis(const std::string &, const std::string &, int64_t, int64_t,
                    int64_t) override {}
  void postAllReduce(const std::string &, const void *in, void *out,
                     int64_t count, DType dtype, bool, int64_t) override {
    log.push_back("post all_reduce");
    std::memmove(out, in, count * dtypeSize(dtype));
  }
  void postAllGather(const std::string &, const void *, void *, int64_t,
                     int64_t, DType, int64_t) override {}
  void postReduceScatter(const std::string &, const void *, void *, int64_t,
                         int64_t, DType, int64_t) override {}
  void waitCollective(int64_t) override { log.push_back("wait_collective"); }
  std::vector<int64_t> allGather(int64_t value) override {
    return {value, value};
  }
  std::vector<std::string> gatherStrings(const std::string &text,
                                         int) override {
    return {text, text};
  }
  void broadcast(void *, int64_t, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(const std::string &message) override {
    throw Error(message);
  }
};

json compute(const char *kernel, int64_t x, int64_t y) {
  return {{"op", "compute"},         {"kernel", kernel},   {"name", kernel},
          {"attrs", json::object()}, {"phase", "forward"}, {"micro_batch", 0},
          {"inputs", {x}},           {"outputs", {y}}};
}

/// Rank 0 of `count` f32 [2] buffers 64 bytes apart (none reuses live
/// bytes): the input x the first, the output z the last.
json rankOf(int64_t count, json coords) {
  json rank = {{"rank", 0},
               {"coords", std::move(coords)},
               {"arena_bytes", 64 * (count - 1) + 8},
               {"params", json::array()},
               {"state", json::array()},
               {"optimizer_state", json::array()},
               {"inputs", {{{"name", "x"}, {"buffer", 0}}}},
               {"outputs", {{{"name", "z"}, {"buffer", count - 1}}}},
               {"constants", json::array()}};
  for (int64_t id = 0; id < count; ++id)
    rank["buffers"].push_back({{"id", id},
                               {"dtype", "f32"},
                               {"shape", {2}},
                               {"bytes", 8},
                               {"offset", 64 * id},
                               {"kind", id ? "activation" : "input"}});
  return rank;
}

/// Two tensor-parallel ranks: a = relu(x); y = all_reduce(a); z = neg(y).
Plan collectivePlan() {
  json rank = rankOf(4, {{"tensor", 0}});
  rank["instructions"] = {compute("relu", 0, 1),
                          {{"op", "all_reduce"},
                           {"axis", "tensor"},
                           {"tag", 0},
                           {"inputs", {1}},
                           {"outputs", {2}},
                           {"phase", "forward"},
                           {"micro_batch", 0}},
                          {{"op", "wait_collective"},
                           {"tag", 0},
                           {"inputs", {2, 1}},
                           {"outputs", json::array()},
                           {"phase", "forward"},
                           {"micro_batch", 0}},
                          compute("neg", 2, 3)};
  json plan = json::parse(R"({
    "format": "weft-plan", "version": 2,
    "model": {"path": "m.onnx", "sha256": ""},
    "mesh": {"axes": [{"name": "tensor", "size": 2}]},
    "micro_batches": 1, "global_batch": 2,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "outputs": [{"name": "z", "dtype": "f32", "shape": [2]}]})");
  json second = rank;
  second["rank"] = 1;
  second["coords"]["tensor"] = 1;
  test::setRanks(plan, {rank, second});
  return parsePlan(plan.dump(), "p.json",
                   [](const std::string &) { return true; });
}

std::vector<std::string> runLogged(bool trace) {
  Plan plan = collectivePlan();
  LoggingBackend backend;
  LoopbackCommunicator comm(backend.log);
  Executor executor(plan, 0, backend, &comm);
  backend.log.clear();
  std::vector<TraceEvent> events;
  executor.run(0, 0, trace ? &events : nullptr);
  return backend.log;
}

TEST(StreamOrder, HandsBuffersBetweenComputeAndComm) {
  std::vector<std::string> expected = {
      "launch relu",
      // the comm stream starts after relu, a's producer
      "record compute", "wait comm", "post all_reduce", "wait_collective",
      // neg, y's consumer, starts after the all-reduce
      "record comm", "wait compute", "launch neg", "synchronize"};
  EXPECT_EQ(runLogged(false), expected);
}

TEST(StreamOrder, TimesKernelsByEventsWithoutSynchronising) {
  std::vector<std::string> expected = {
      "record compute", // the step's origin
      "record compute", "launch relu",     "record compute",  "record compute",
      "wait comm",      "post all_reduce", "wait_collective", "record comm",
      "wait compute",   "record compute",  "launch neg",      "record compute",
      "synchronize"};
  EXPECT_EQ(runLogged(true), expected);
}

/// One rank: a = relu(x), b = neg(a), c = neg(b), z = neg(c), f32 [2].
Plan chainPlan() {
  json rank = rankOf(5, json::object());
  rank["instructions"] = {compute("relu", 0, 1), compute("neg", 1, 2),
                          compute("neg", 2, 3), compute("neg", 3, 4)};
  json plan = json::parse(R"({
    "format": "weft-plan", "version": 2,
    "model": {"path": "m.onnx", "sha256": ""},
    "mesh": {"axes": []}, "micro_batches": 1, "global_batch": 2,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "outputs": [{"name": "z", "dtype": "f32", "shape": [2]}]})");
  test::setRanks(plan, {rank});
  return parsePlan(plan.dump(), "p.json",
                   [](const std::string &) { return true; });
}

/// A run of consecutive instructions of a kernel the backend launches
/// together (CUDA's multi-tensor AdamW) is one launchGroup, in order, with
/// each call's own instruction index; the result is the one-by-one one.
/// Under --trace each kernel is launched, and timed, alone.
TEST(StreamOrder, LaunchesARunOfAGroupedKernelTogether) {
  for (bool trace : {false, true}) {
    Plan plan = chainPlan();
    LoggingBackend backend;
    backend.grouped = "neg";
    Executor executor(plan, 0, backend, nullptr);
    float x[2] = {1.5f, -2.0f};
    executor.setInput("x", std::string(reinterpret_cast<char *>(x), 8));
    backend.log.clear();
    std::vector<TraceEvent> events;
    executor.run(0, 0, trace ? &events : nullptr);
    std::vector<std::string> launches;
    for (const std::string &entry : backend.log)
      if (entry.rfind("launch", 0) == 0)
        launches.push_back(entry);
    std::vector<std::string> expected =
        trace ? std::vector<std::string>{"launch relu", "launch neg",
                                         "launch neg", "launch neg"}
              : std::vector<std::string>{"launch relu",
                                         "launch group neg@1 neg@2 neg@3"};
    EXPECT_EQ(launches, expected) << (trace ? "traced" : "untraced");
    std::string z = executor.output("z");
    float got[2];
    std::memcpy(got, z.data(), 8);
    EXPECT_EQ(got[0], -1.5f);
    EXPECT_EQ(got[1], 0.0f);
  }
}

} // namespace
