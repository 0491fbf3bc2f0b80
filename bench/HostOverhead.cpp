//===- HostOverhead.cpp - weft's host time per step on the CUDA path ------===//
//
// Runs a plan's training steps through the CUDA backend on the CUDA
// emulator and splits each step's wall time in two: the emulated device's
// work (kernels' blocks, cuBLASLt's and cuDNN's arithmetic, copies: what
// emulator::DeviceWork counts) and the rest, the host time the step needs
// whatever the GPU: the executor, the backend's launch path (argument
// marshalling, GEMM and convolution plan lookups, events) and the
// emulator's stand-ins for the CUDA runtime's calls. Those stand-ins cost
// less than the driver's real calls (a few microseconds per launch on a
// GPU), so the figure is a lower bound on the host time per step; a GPU
// step shorter than it would be host-bound. bench/host_overhead.py drives
// it.
//
// Usage: weft-bench-host-overhead PLAN STEPS
// Prints one JSON line per step: step, seconds (wall), device_seconds,
// host_seconds (their difference), instructions, kernel_launches and
// library_calls. Inputs are weft-run's synthetic ones (--data synthetic).
// Exit 1 with one line on a bad plan or argument.
//
//===----------------------------------------------------------------------===//

#include "../runtime/backends/cuda/emulator/Emulator.h"
#include "weft/runtime/Data.h"
#include "weft/runtime/Executor.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

using namespace weft::rt;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PLAN STEPS\n", argv[0]);
    return 1;
  }
  try {
    int64_t steps = std::stoll(argv[2]);
    std::unique_ptr<Backend> backend = createCudaBackend(0);
    Plan plan = loadPlan(argv[1], [&](const std::string &kernel) {
      return backend->hasKernel(kernel);
    });
    Executor executor(plan, 0, *backend);
    executor.loadWeights();
    const uint64_t seed = 0;
    for (int64_t step = 0; step < steps; ++step) {
      for (const auto &[name, bytes] : syntheticInputs(plan, seed, step))
        executor.setInput(name, bytes);
      cuda::emulator::DeviceTotals before = cuda::emulator::deviceTotals();
      auto start = std::chrono::steady_clock::now();
      executor.run(step, seed, nullptr); // ends synchronised
      double seconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      cuda::emulator::DeviceTotals after = cuda::emulator::deviceTotals();
      double device = after.seconds - before.seconds;
      std::printf("{\"step\": %lld, \"seconds\": %.9g, \"device_seconds\": "
                  "%.9g, \"host_seconds\": %.9g, \"instructions\": %zu, "
                  "\"kernel_launches\": %lld, \"library_calls\": %lld}\n",
                  (long long)step, seconds, device, seconds - device,
                  plan.ranks.at(0).instructions.size(),
                  (long long)(after.kernelLaunches - before.kernelLaunches),
                  (long long)(after.libraryCalls - before.libraryCalls));
      std::fflush(stdout);
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "weft-bench-host-overhead: %s\n", e.what());
    return 1;
  }
  return 0;
}
