//===- Calibrate.cpp - weft-run --calibrate -------------------------------===//

#include "Calibrate.h"

#include "weft/runtime/KernelSpec.h"

#include "../kernels/Kernel.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <unistd.h>
#include <vector>

namespace weft::rt {

namespace {

using Clock = std::chrono::steady_clock;

/// The fastest of a few runs of `fn`, seconds: runs until 3 runs and 50
/// ms have passed (after one warm-up run), at most 20 runs; `before`, when
/// given, runs untimed before each.
double fastest(const std::function<void()> &fn,
               const std::function<void()> &before = nullptr) {
  fn();
  double best = 1e30, total = 0;
  for (int run = 0; run < 20 && (run < 3 || total < 0.05); ++run) {
    if (before)
      before();
    auto start = Clock::now();
    fn();
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, seconds);
    total += seconds;
  }
  return best;
}

/// Tensors of the given shapes in one arena of the backend, launched as
/// `kernel` (checked as a plan's instruction is).
struct Launch {
  Backend &backend;
  std::string kernel;
  std::vector<Tensor> in, out;
  CheckedKernel checked;
  KernelContext context;
  void *arena = nullptr;

  Launch(Backend &backend, std::string kernel, DType dtype,
         const std::vector<std::vector<int64_t>> &inShapes,
         const std::vector<std::vector<int64_t>> &outShapes,
         const nlohmann::json &attrs)
      : backend(backend), kernel(std::move(kernel)) {
    std::vector<OperandPlacement> placedIn, placedOut;
    int64_t offset = 0;
    auto place = [&](const std::vector<int64_t> &shape) {
      OperandPlacement p{{dtype, shape}, offset};
      offset += (p.type.bytes() + 255) / 256 * 256;
      return p;
    };
    for (const auto &shape : inShapes)
      placedIn.push_back(place(shape));
    for (const auto &shape : outShapes)
      placedOut.push_back(place(shape));
    checked =
        checkKernel(*findKernelSpec(this->kernel), placedIn, placedOut, attrs);
    arena = backend.allocateArena(offset);
    auto tensor = [&](const OperandPlacement &p) {
      return Tensor{static_cast<char *>(arena) + p.offset, dtype, p.type.shape};
    };
    for (const OperandPlacement &p : placedIn)
      in.push_back(tensor(p));
    for (const OperandPlacement &p : placedOut)
      out.push_back(tensor(p));
  }
  Launch(const Launch &) = delete;
  Launch &operator=(const Launch &) = delete;
  ~Launch() { backend.freeArena(arena); }
  void operator()() {
    backend.launch(KernelCall{kernel, in, out, checked.attrs, context});
    backend.synchronize();
  }
};

nlohmann::json measured(double value, const std::string &source) {
  return {{"value", value}, {"source", source}};
}

/// FLOP/s of an m x k by k x n matmul in `dtype`, its operands evicted
/// from the caches before each run by `evict` (as a training step's GEMM
/// finds its weights: other layers' work ran in between).
double gemmRate(Backend &backend, int64_t m, int64_t n, int64_t k, DType dtype,
                Launch &evict) {
  Launch matmul(backend, "matmul", dtype, {{m, k}, {k, n}}, {{m, n}},
                nlohmann::json::object());
  return 2.0 * double(m) * double(n) * double(k) /
         fastest([&] { matmul(); }, [&] { evict(); });
}

/// Seconds of a one-way transfer of `bytes` between ranks 0 and 1 (half a
/// round trip), the fastest of several.
double oneWay(Communicator &world, std::vector<char> &buffer, int64_t bytes) {
  int me = world.rank(), peer = 1 - me;
  if (me > 1)
    return 0;
  int64_t tag = 0;
  auto roundTrip = [&] {
    if (me == 0) {
      world.isend(buffer.data(), bytes, peer, ++tag);
      world.wait(tag);
      world.irecv(buffer.data(), bytes, peer, ++tag);
      world.wait(tag);
    } else {
      world.irecv(buffer.data(), bytes, peer, ++tag);
      world.wait(tag);
      world.isend(buffer.data(), bytes, peer, ++tag);
      world.wait(tag);
    }
  };
  // Both ranks run the same number of round trips: a fixed count, not
  // fastest()'s time-based one.
  roundTrip();
  double best = 1e30;
  for (int run = 0; run < 10; ++run) {
    auto start = Clock::now();
    roundTrip();
    best = std::min(
        best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best / 2;
}

} // namespace

nlohmann::json calibrate(Backend &backend, Communicator &world,
                         const std::string &device) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  std::string by = std::string("measured by weft-run --calibrate --device ") +
                   device + " on " + host + ", " + date + ": ";

  // Memory: c = a + b over 16 Mi floats (64 MiB each), 3 x 64 MiB moved,
  // more than a CPU's last-level cache or a GPU's L2 holds.
  const int64_t floats = int64_t(16) << 20;
  Launch add(backend, "add", DType::F32, {{floats}, {floats}}, {{floats}},
             nlohmann::json::object());
  double bandwidth = 3.0 * 4.0 * double(floats) / fastest([&] { add(); });
  // GEMMs: f32 over a grid, and one f64 point, each from cold caches (the
  // add above run before each).
  nlohmann::json points = nlohmann::json::array();
  double best = 0;
  const int64_t sizes[] = {64, 256, 1024};
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes) {
        double rate = gemmRate(backend, m, n, k, DType::F32, add);
        best = std::max(best, rate);
        points.push_back({m, n, k, rate});
      }
  double f64 = gemmRate(backend, 1024, 1024, 1024, DType::F64, add);

  // Transfers between ranks 0 and 1: latency + bytes / bandwidth, least
  // squares over 8 B .. 16 MiB.
  double latency = 10e-6, link = 4e9;
  std::string linkSource = "not measured (one rank: run weft-run --calibrate "
                           "under mpirun -np 2); weft's CPU default";
  if (world.size() > 1) {
    std::vector<char> buffer(int64_t(16) << 20);
    std::vector<std::pair<double, double>> samples;
    for (int64_t bytes = 8; bytes <= int64_t(16) << 20; bytes *= 8)
      samples.push_back({double(bytes), oneWay(world, buffer, bytes)});
    double sx = 0, sy = 0, sxx = 0, sxy = 0, count = double(samples.size());
    for (auto [x, y] : samples) {
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    double slope = (count * sxy - sx * sy) / (count * sxx - sx * sx);
    double intercept = (sy - slope * sx) / count;
    link = slope > 0 ? 1 / slope : link;
    latency = intercept > 0 ? intercept : samples.front().second;
    linkSource = by + "ping-pong between ranks 0 and 1, 8 B to 16 MiB, "
                      "least-squares latency + bytes / bandwidth";
  }

  long pages = sysconf(_SC_PHYS_PAGES), pageBytes = sysconf(_SC_PAGESIZE);
  std::string gemmSource = by + "the fastest f32 matmul of the sweep";
  return {
      {"name", std::string("calibrated-") + device},
      {"description", std::string("weft-run --calibrate on ") + host + ", " +
                          std::to_string(world.size()) + " rank(s)"},
      {"peak_flops_bf16",
       measured(best, gemmSource + " (16-bit tensors are widened to f32)")},
      {"peak_flops_f16",
       measured(best, gemmSource + " (16-bit tensors are widened to f32)")},
      {"peak_flops_tf32", measured(best, gemmSource + " (no TF32 here)")},
      {"peak_flops_f32", measured(best, gemmSource)},
      {"peak_flops_f64", measured(f64, by + "an f64 1024^3 matmul")},
      {"memory_bandwidth",
       measured(bandwidth, by + "the add kernel over 64 MiB operands, 3 x 64 "
                                "MiB moved")},
      {"memory_capacity", measured(double(pages) * double(pageBytes),
                                   by + "the machine's physical memory")},
      {"devices_per_node",
       measured(world.size(), by + "the ranks of this job, one node")},
      {"intra_node_bandwidth", measured(link, linkSource)},
      {"intra_node_latency", measured(latency, linkSource)},
      {"nics_per_node", measured(1, "one node: never crossed")},
      {"nic_bandwidth", measured(link, "one node: the ranks' link")},
      {"inter_node_latency", measured(latency, "one node: the ranks' link")},
      {"gemm_efficiency",
       {{"dtype", "f32"},
        {"source", by + "matmul kernel from cold caches, fastest of a few "
                        "runs each"},
        {"points", points}}},
  };
}

} // namespace weft::rt
