//===- Emulator.cpp - a CUDA block's threads as cooperative fibers --------===//
//
// One block at a time. A fiber runs threads in order, each to its end, and
// takes the next; when a thread waits (at __syncthreads or a shuffle) its
// fiber parks and a fresh fiber takes the next thread. So a kernel without
// barriers runs a whole block on one fiber, and one with them has a fiber
// per waiting thread. When no fiber can run, the scheduler releases the
// warps whose 32 lanes all wait at a shuffle, else the block if every
// thread waits at __syncthreads. Else the kernel has done what CUDA leaves
// undefined, and the launch fails: some threads wait at __syncthreads that
// others ended without reaching, or some lanes wait at a shuffle others of
// their warp never reach.
//
// Switches: makecontext gives each fiber its stack and swapcontext enters
// it once; from then on _setjmp/_longjmp switch, which unlike swapcontext
// leave the signal mask alone (no system call per switch: a warp-per-row
// kernel switches five times per lane per shuffle reduction).
//
//===----------------------------------------------------------------------===//

// glibc's fortified longjmp refuses a jump to another stack.
#undef _FORTIFY_SOURCE

#include "Emulator.h"

#include "weft/runtime/Tensor.h"

#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace weft::rt::cuda::emulator {

Builtins builtins;

namespace {

constexpr int kWarp = 32;
// Kernels keep a few scalars and call libm; glibc's exp and log take a
// few KiB. Mapped lazily, so unused stack costs nothing.
constexpr size_t kStackBytes = 256 << 10;

enum class Wait { None, Block, Warp };

struct Thread {
  uint3 index;
  Wait wait = Wait::None;
  bool done = false;
  uint64_t shuffles = 0; ///< how many this thread has made
};

struct Fiber {
  ucontext_t context; ///< its entry
  jmp_buf parked;     ///< where it waits
  void *stack = nullptr;
  int thread = -1; ///< the thread it runs
  bool started = false, finished = false;
  Fiber() {
    stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED)
      throw Error("CUDA emulator: cannot map a fiber's stack");
  }
  ~Fiber() { munmap(stack, kStackBytes); }
};

/// The block being run.
struct Block {
  jmp_buf scheduler;  ///< where a fiber that waits or ends returns
  ucontext_t entered; ///< swapcontext's save of the scheduler: unused
  const std::function<void()> *body = nullptr;
  std::vector<Thread> threads;
  size_t next = 0; ///< the first thread no fiber has taken
  Fiber *current = nullptr;
  /// A shuffle's values by thread, two rounds apart: a lane released from
  /// one shuffle may write its next before a slower lane has read this one.
  std::vector<uint64_t> slots[2];
  std::vector<std::unique_ptr<Fiber>> pool; ///< kept across launches
  std::vector<Fiber *> idle;                ///< of the pool, free
};

Block block;
cudaError_t launchError = cudaSuccess;

void resumeBuiltins(int thread) {
  builtins.thread = block.threads[thread].index;
}

void fiberMain() {
  Fiber *fiber = block.current;
  while (block.next < block.threads.size()) {
    fiber->thread = int(block.next++);
    resumeBuiltins(fiber->thread);
    (*block.body)();
    block.threads[fiber->thread].done = true;
  }
  fiber->finished = true;
  _longjmp(block.scheduler, 1);
}

Fiber *startFiber() {
  if (block.idle.empty()) {
    block.pool.push_back(std::make_unique<Fiber>());
    block.idle.push_back(block.pool.back().get());
  }
  Fiber *fiber = block.idle.back();
  block.idle.pop_back();
  fiber->thread = -1;
  fiber->started = fiber->finished = false;
  getcontext(&fiber->context);
  fiber->context.uc_stack.ss_sp = fiber->stack;
  fiber->context.uc_stack.ss_size = kStackBytes;
  fiber->context.uc_link = nullptr; // fiberMain never returns
  makecontext(&fiber->context, fiberMain, 0);
  return fiber;
}

/// Parks the running thread until the scheduler releases it.
void park(Wait wait) {
  Fiber *fiber = block.current;
  block.threads[fiber->thread].wait = wait;
  if (!_setjmp(fiber->parked))
    _longjmp(block.scheduler, 1);
}

std::string blockName() {
  const uint3 &b = builtins.block;
  return "block (" + std::to_string(b.x) + ", " + std::to_string(b.y) + ", " +
         std::to_string(b.z) + ")";
}

/// Releases what can go on; throws when nothing can.
void release(std::vector<Fiber *> &parked, std::deque<Fiber *> &runnable) {
  std::vector<int> waiting(block.threads.size() / kWarp + 1, 0);
  bool allAtBlock = block.next == block.threads.size();
  for (Fiber *fiber : parked) {
    const Thread &t = block.threads[fiber->thread];
    if (t.wait == Wait::Warp)
      ++waiting[fiber->thread / kWarp];
    allAtBlock = allAtBlock && t.wait == Wait::Block;
  }
  auto keep = [&](auto &&released) {
    std::vector<Fiber *> still;
    for (Fiber *fiber : parked)
      if (released(fiber)) {
        block.threads[fiber->thread].wait = Wait::None;
        runnable.push_back(fiber);
      } else {
        still.push_back(fiber);
      }
    parked.swap(still);
  };
  bool warps = false;
  for (size_t w = 0; w < waiting.size(); ++w)
    warps = warps || waiting[w] == kWarp;
  if (warps)
    return keep([&](Fiber *f) { return waiting[f->thread / kWarp] == kWarp; });
  if (allAtBlock) {
    size_t ended = 0;
    for (const Thread &t : block.threads)
      ended += t.done;
    if (ended == 0)
      return keep([](Fiber *) { return true; });
    throw Error("CUDA emulator: " + blockName() + ": " +
                std::to_string(parked.size()) +
                " threads wait at __syncthreads that " + std::to_string(ended) +
                " others ended without reaching (undefined on a GPU)");
  }
  // Some lanes wait at a shuffle their warp's others never reach (they
  // left, or wait at __syncthreads, or the warp is a block's partial last).
  size_t w = 0;
  while (waiting[w] == 0)
    ++w;
  throw Error("CUDA emulator: " + blockName() + ": " +
              std::to_string(waiting[w]) + " of warp " + std::to_string(w) +
              "'s lanes wait at a full-mask shuffle the others never reach "
              "(undefined on a GPU)");
}

void runBlock() {
  block.next = 0;
  block.idle.clear();
  for (auto &fiber : block.pool)
    block.idle.push_back(fiber.get());
  for (Thread &t : block.threads)
    t = Thread{t.index};
  std::deque<Fiber *> runnable{startFiber()};
  std::vector<Fiber *> parked;
  while (!runnable.empty() || !parked.empty()) {
    if (runnable.empty()) {
      release(parked, runnable);
      continue;
    }
    Fiber *fiber = runnable.front();
    runnable.pop_front();
    block.current = fiber;
    if (fiber->thread >= 0)
      resumeBuiltins(fiber->thread);
    if (!_setjmp(block.scheduler)) {
      if (fiber->started)
        _longjmp(fiber->parked, 1);
      fiber->started = true;
      swapcontext(&block.entered, &fiber->context);
    }
    if (fiber->finished) {
      block.idle.push_back(fiber);
      continue;
    }
    parked.push_back(fiber);
    if (block.next < block.threads.size())
      runnable.push_back(startFiber());
  }
}

bool validShape(dim3 grid, dim3 threads) {
  uint64_t count = uint64_t(threads.x) * threads.y * threads.z;
  return count >= 1 && count <= 1024 && threads.z <= 64 && grid.x >= 1 &&
         grid.y >= 1 && grid.z >= 1 && grid.x <= 0x7FFFFFFFu &&
         grid.y <= 65535 && grid.z <= 65535;
}

} // namespace

bool launchable(dim3 grid, dim3 threads) {
  if (validShape(grid, threads))
    return true;
  launchError = cudaErrorInvalidConfiguration;
  return false;
}

void run(dim3 grid, dim3 threads, const std::function<void()> &thread) {
  DeviceWork work(DeviceWork::Kernel);
  block.body = &thread;
  block.threads.clear();
  for (unsigned z = 0; z < threads.z; ++z)
    for (unsigned y = 0; y < threads.y; ++y)
      for (unsigned x = 0; x < threads.x; ++x)
        block.threads.push_back(Thread{uint3{x, y, z}});
  for (auto &slots : block.slots)
    slots.assign(block.threads.size(), 0);
  builtins.blockSize = threads;
  builtins.gridSize = grid;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        builtins.block = uint3{x, y, z};
        runBlock();
      }
}

void syncThreads() { park(Wait::Block); }

uint64_t shuffleXor(uint64_t bits, int laneMask) {
  int thread = block.current->thread;
  uint64_t round = block.threads[thread].shuffles++ % 2;
  block.slots[round][thread] = bits;
  park(Wait::Warp);
  int lane = thread % kWarp, other = lane ^ laneMask;
  // A partial last warp is released only when 32 lanes wait, so `other`
  // is a thread of this block.
  return block.slots[round][thread - lane + other];
}

namespace {

/// What DeviceWork sums, and when the outermost guard began.
struct {
  int depth = 0;
  std::chrono::steady_clock::time_point start;
  DeviceTotals totals;
} profile;

} // namespace

DeviceWork::DeviceWork(Kind kind, cudaStream_t after) {
  profile.totals.kernelLaunches += kind == Kernel;
  profile.totals.libraryCalls += kind == Library;
  if (profile.depth++ == 0)
    profile.start = std::chrono::steady_clock::now();
  order(after); // a null stream has nothing deferred
}

DeviceWork::~DeviceWork() {
  if (--profile.depth == 0)
    profile.totals.seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      profile.start)
            .count();
}

DeviceTotals deviceTotals() { return profile.totals; }

void countAlgorithmQuery() { ++profile.totals.algorithmQueries; }

cudaError_t takeLaunchError() {
  cudaError_t error = launchError;
  launchError = cudaSuccess;
  return error;
}

} // namespace weft::rt::cuda::emulator
