//===- CpuBackend.cpp - host memory, OpenBLAS, synchronous kernels --------===//

#include "weft/runtime/Backend.h"

#include "../kernels/Fused.h"
#include "../kernels/Half.h"
#include "../kernels/Kernel.h"

#include <cblas.h>

#include <chrono>
#include <cstdlib>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <cstring>
#include <map>
#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace weft::rt {

namespace {
/// Flush denormal floats to zero, in results (FTZ) and inputs (DAZ), on the
/// calling thread, as XLA's and oneDNN's CPU backends do. Training produces
/// denormals (softmax tails, AdamW's second moment of rare embedding rows),
/// and x86 computes on them through microcode, 10-100x slower: measured on
/// gpt medium, steps went from 3.5 s to 15 s once they appeared. Values
/// below 1.2e-38 become 0, far under the tolerance of any comparison here.
void flushDenormals() {
#if defined(__SSE__)
  _mm_setcsr(_mm_getcsr() | 0x8040); // FTZ (bit 15) | DAZ (bit 6)
#endif
}

/// The arena is allocated in 2 MiB pages where the kernel gives them
/// (transparent huge pages in "madvise" mode, Debian's default, give them
/// only to memory that asks): a step's GEMMs and row kernels sweep hundreds
/// of MiB, and 4 KiB pages cost a TLB miss every 4 KiB of it.
constexpr int64_t kHugePage = int64_t(2) << 20;
void adviseHugePages(void *memory, int64_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  madvise(memory, bytes, MADV_HUGEPAGE); // advice: failure changes nothing
#endif
}

/// Runs `fn` on f32 copies of the call's f16/bf16 tensors and rounds the
/// outputs back to nearest even: the CPU's form of a 16-bit kernel that
/// loads 16 bits, computes in f32 registers (GEMMs accumulate in f32) and
/// stores 16 bits, as the CUDA kernels and cuBLAS's bf16 GEMMs with f32
/// compute do. A tensor that is an input and an output (an in-place
/// update) is one copy.
void launchWidened(const KernelCall &call, KernelFn fn) {
  std::map<void *, std::vector<float>> wide;
  auto widen = [&](const Tensor &t) {
    Tensor f{t.data, t.dtype, t.shape};
    if (!isHalf(t.dtype))
      return f;
    auto [it, fresh] = wide.try_emplace(t.data);
    if (fresh) {
      it->second.resize(t.numel());
      const auto *bits = t.as<uint16_t>();
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        it->second[i] =
            t.dtype == DType::F16 ? fromF16(bits[i]) : fromBF16(bits[i]);
    }
    f.data = it->second.data();
    f.dtype = DType::F32;
    return f;
  };
  std::vector<Tensor> in, out;
  for (const Tensor &t : call.in)
    in.push_back(widen(t));
  for (const Tensor &t : call.out)
    out.push_back(widen(t));
  fn(KernelCall{call.kernel, std::move(in), std::move(out), call.attrs,
                call.ctx});
  for (const Tensor &t : call.out) {
    if (!isHalf(t.dtype))
      continue;
    const std::vector<float> &values = wide.at(t.data);
    auto *bits = t.as<uint16_t>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i)
      bits[i] = t.dtype == DType::F16 ? toF16(values[i]) : toBF16(values[i]);
  }
}

bool has16(const KernelCall &call) {
  for (const auto *list : {&call.in, &call.out})
    for (const Tensor &t : *list)
      if (isHalf(t.dtype))
        return true;
  return false;
}

struct CpuEvent final : Event {
  std::chrono::steady_clock::time_point at;
};

class CpuBackend final : public Backend {
public:
  std::string name() const override { return "cpu"; }

  void *allocateArena(int64_t bytes) override {
    // aligned_alloc needs a size that is a multiple of the alignment.
    int64_t rounded =
        (std::max<int64_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
    void *arena = std::aligned_alloc(kHugePage, rounded);
    if (!arena)
      throw Error("cannot allocate an arena of " + std::to_string(bytes) +
                  " bytes");
    adviseHugePages(arena, rounded);
    std::memset(arena, 0, rounded);
    return arena;
  }
  void freeArena(void *arena) override { std::free(arena); }
  void upload(void *device, const void *host, int64_t bytes) override {
    std::memcpy(device, host, bytes);
  }
  void download(void *host, const void *device, int64_t bytes) override {
    std::memcpy(host, device, bytes);
  }
  bool hasKernel(const std::string &kernel) const override {
    return kernelTable().count(kernel) || fusedKernels().count(kernel);
  }
  void launch(const KernelCall &call) override {
    // A fused kernel runs as its parts, each launched as here (Fused.h).
    if (FusedFn parts = partsOf(call))
      return parts(call, [this](const KernelCall &part) { launch(part); });
    KernelFn fn = kernelTable().at(call.kernel);
    // Cast converts 16-bit values itself; every other kernel is written
    // over f32/f64 and sees 16-bit tensors widened.
    if (call.kernel != "cast" && has16(call))
      return launchWidened(call, fn);
    fn(call);
  }
  void synchronize() override {}

  // Kernels have finished when launch() returns: an event is the time it
  // was recorded, and nothing needs to wait.
  std::unique_ptr<Event> createEvent() override {
    return std::make_unique<CpuEvent>();
  }
  void record(Event &event, Stream) override {
    static_cast<CpuEvent &>(event).at = std::chrono::steady_clock::now();
  }
  void wait(Stream, const Event &) override {}
  double elapsedUs(const Event &from, const Event &to) override {
    return std::chrono::duration<double, std::micro>(
               static_cast<const CpuEvent &>(to).at -
               static_cast<const CpuEvent &>(from).at)
        .count();
  }
  void *allocateHost(int64_t bytes) override {
    void *host =
        std::aligned_alloc(64, (std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
    if (!host)
      throw Error("cannot allocate " + std::to_string(bytes) +
                  " bytes of host staging memory");
    return host;
  }
  void freeHost(void *host) override { std::free(host); }
  void setThreads(int threads) override {
    openblas_set_num_threads(threads);
    flushDenormals();
  }
};
} // namespace

std::unique_ptr<Backend> createCpuBackend() {
  flushDenormals(); // kernels run on the thread that creates the backend
  return std::make_unique<CpuBackend>();
}

} // namespace weft::rt
