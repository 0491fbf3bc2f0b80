//===- Emulator.h - CUDA's device built-ins on the host --------*- C++ -*-===//
//
// The CUDA emulator compiles the CUDA backend's own kernels (the .cu files)
// as host C++ and runs each launch on the CPU, so CI checks the code a GPU
// runs (grid-stride indexing, warp and block reductions, launch shapes)
// where no GPU is. A launch on a stream is deferred until the stream's
// work is waited for (Runtime.cpp), so the events between streams matter
// here as on a GPU. A launch runs its blocks one after another; a block's
// threads are cooperative fibers that switch only at __syncthreads() and
// __shfl_xor_sync(), so the barriers and shuffles a kernel relies on hold,
// and a block whose threads wait at different barriers, or a full-mask
// shuffle some lane of the warp left, fails the launch (both are undefined
// on a GPU). Device memory is host memory (emulator/Runtime.cpp); cuBLASLt
// and cuDNN's descriptor API are reference implementations with the
// semantics their documentation gives (emulator/CublasLt.cpp, Cudnn.cpp);
// NCCL runs over MPI (emulator/Nccl.cpp), its operations deferred as
// launches are; cuDNN's fused attention (its frontend's graphs) is not
// emulated, so its kernels are absent.
//
// What it cannot show: races between threads (a fiber runs until it waits)
// and anything of the hardware (timing, memory ordering, resource limits
// beyond the launch's shape). Launches come from one host thread, as
// weft's executor makes them.
//
// This header is included before each .cu file (CMake's weft_cuda_emulator
// compiles wrappers that include it first).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_EMULATOR_H
#define WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_EMULATOR_H

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <functional>

namespace weft::rt::cuda::emulator {

/// The running thread's built-in variables, set by the scheduler whenever
/// a thread is resumed.
struct Builtins {
  uint3 thread{0, 0, 0}, block{0, 0, 0}; ///< threadIdx, blockIdx
  dim3 blockSize, gridSize;              ///< blockDim, gridDim
};
extern Builtins builtins;

/// Runs `thread` for every thread of `grid` x `block` (a shape launchable
/// accepted); a barrier some thread left or a shuffle some lane never
/// reaches throws weft::rt::Error naming the block.
void run(dim3 grid, dim3 block, const std::function<void()> &thread);

/// Parks the thread until every thread of its block has arrived.
void syncThreads();

/// Lane (lane ^ laneMask)'s `bits` (a full-mask __shfl_xor_sync of a warp
/// of 32 lanes).
uint64_t shuffleXor(uint64_t bits, int laneMask);

/// The error the last launch left (cleared by reading it).
cudaError_t takeLaunchError();

/// Work enqueued on `stream` that completes later (kernel launches, the
/// emulated NCCL's MPI requests): `complete` runs once, in stream order,
/// when the stream is synchronised, an event recorded after it is waited
/// for, synchronised or queried, or other work is enqueued after it.
void defer(cudaStream_t stream, std::function<void()> complete);

/// Completes `stream`'s deferred work: what is enqueued after it on the
/// stream (a copy, a launch, a free) runs after it, in stream order.
void order(cudaStream_t stream);

/// A guard around work a GPU would do (a kernel's blocks, a library's
/// arithmetic, a copy): the host time the emulator spends in such work
/// is summed (nested guards count once), so a benchmark can tell weft's
/// own host time from the emulated device's (bench/HostOverhead.cpp).
/// Work enqueued on a stream gives it as `after`: the stream's deferred
/// work runs first (order), as it would before this work on a GPU.
class DeviceWork {
public:
  enum Kind { Kernel, Library, Copy };
  explicit DeviceWork(Kind kind, cudaStream_t after = nullptr);
  ~DeviceWork();
  DeviceWork(const DeviceWork &) = delete;
  DeviceWork &operator=(const DeviceWork &) = delete;
};

/// What the emulator has counted since the process started.
struct DeviceTotals {
  double seconds = 0;         ///< host seconds inside the outermost guards
  int64_t kernelLaunches = 0; ///< kernels run
  int64_t libraryCalls = 0;   ///< cuBLASLt's and cuDNN's computing calls
  /// cuBLASLt's heuristic asked, cuDNN's convolution algorithms ranked: the
  /// backend asks once per configuration (GemmPlan.h, Convolution.cpp).
  int64_t algorithmQueries = 0;
};
DeviceTotals deviceTotals();
/// Counts one algorithm query (the emulated cuBLASLt and cuDNN).
void countAlgorithmQuery();

/// Whether CUDA launches `grid` x `block`; if not, sets the launch error
/// (cudaErrorInvalidConfiguration), as the launch call itself does.
bool launchable(dim3 grid, dim3 block);

/// `kernel<<<grid, block, 0, stream>>>`: a callable taking the kernel's
/// arguments (copied, as a launch copies them), `kernel` a callable that
/// calls the kernel with them (so a kernel template's parameters are
/// deduced from them, as nvcc does). On a stream the launch is deferred
/// work that runs when the stream is waited for (in stream order, before
/// anything enqueued after it), so a missing event between streams reads
/// stale bytes here as on a GPU; without one it runs at once.
template <typename Kernel>
auto launch(dim3 grid, dim3 block, cudaStream_t stream, Kernel kernel) {
  return [=](const auto &...args) {
    if (!launchable(grid, block))
      return;
    auto task = [=] { run(grid, block, [&] { kernel(args...); }); };
    if (stream)
      defer(stream, task);
    else
      task();
  };
}

} // namespace weft::rt::cuda::emulator

// The device built-ins, as the kernels spell them.
#define threadIdx (::weft::rt::cuda::emulator::builtins.thread)
#define blockIdx (::weft::rt::cuda::emulator::builtins.block)
#define blockDim (::weft::rt::cuda::emulator::builtins.blockSize)
#define gridDim (::weft::rt::cuda::emulator::builtins.gridSize)

// Block-shared arrays are one per kernel instantiation; blocks run one
// after another, so one copy serves them all.
#undef __shared__
#define __shared__ static

// Register limits are the GPU's: nothing to bound here.
#define __launch_bounds__(...)

#define WEFT_LAUNCH(kernel, grid, block, stream, ...)                          \
  ::weft::rt::cuda::emulator::launch(                                          \
      grid, block, stream,                                                     \
      [=](const auto &...args) { kernel(args...); })(__VA_ARGS__)

inline void __syncthreads() { ::weft::rt::cuda::emulator::syncThreads(); }

inline void __threadfence_system() {}

template <typename T> T __shfl_xor_sync(unsigned mask, T value, int laneMask) {
  static_assert(sizeof(T) <= sizeof(uint64_t));
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = ::weft::rt::cuda::emulator::shuffleXor(bits, laneMask);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// Fibers of one host thread: a read-compare-write is atomic.
inline int atomicCAS(int *address, int compare, int value) {
  int old = *address;
  if (old == compare)
    *address = value;
  return old;
}

#endif // WEFT_RUNTIME_BACKENDS_CUDA_EMULATOR_EMULATOR_H
