//===- CpuBackend.cpp - host memory, OpenBLAS, synchronous kernels --------===//

#include "weft/runtime/Backend.h"

#include "../kernels/Kernel.h"

#include <cblas.h>

#include <cstdlib>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <cstring>

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

class CpuBackend final : public Backend {
public:
  std::string name() const override { return "cpu"; }

  void *allocateArena(int64_t bytes) override {
    // aligned_alloc needs a size that is a multiple of the alignment.
    int64_t rounded = (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
    void *arena = std::aligned_alloc(64, rounded);
    if (!arena)
      throw Error("cannot allocate an arena of " + std::to_string(bytes) +
                  " bytes");
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
    return kernelTable().count(kernel) != 0;
  }
  void launch(const KernelCall &call) override {
    kernelTable().at(call.kernel)(call);
  }
  void synchronize() override {}
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
