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

/// Two tensor-parallel ranks: a = relu(x); y = all_reduce(a); z = neg(y).
Plan collectivePlan() {
  json rank = json::parse(R"({
    "rank": 0, "coords": {"tensor": 0}, "arena_bytes": 200,
    "params": [], "state": [], "optimizer_state": [],
    "inputs": [{"name": "x", "buffer": 0}],
    "outputs": [{"name": "z", "buffer": 3}], "constants": []})");
  // x, a, y, z: f32 [2], 64 bytes apart (z reuses no live bytes).
  for (int64_t id = 0; id < 4; ++id)
    rank["buffers"].push_back({{"id", id},
                               {"dtype", "f32"},
                               {"shape", {2}},
                               {"bytes", 8},
                               {"offset", 64 * id},
                               {"kind", id ? "activation" : "input"}});
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
    "format": "weft-plan", "version": 1,
    "model": {"path": "m.onnx", "sha256": ""},
    "mesh": {"axes": [{"name": "tensor", "size": 2}]},
    "micro_batches": 1, "global_batch": 2,
    "inputs": [{"name": "x", "dtype": "f32", "shape": [2]}],
    "outputs": [{"name": "z", "dtype": "f32", "shape": [2]}]})");
  json second = rank;
  second["rank"] = 1;
  second["coords"]["tensor"] = 1;
  plan["ranks"] = {rank, second};
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

} // namespace
