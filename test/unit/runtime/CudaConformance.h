//===- CudaConformance.h - CUDA kernels against the CPU's: the harness ----===//
//
// Each kernel the CUDA backend implements runs on random inputs through
// both backends (the same Backend interface: arena, upload, launch,
// download) and the outputs are compared. Tolerances per dtype: f32 within
// 1e-5 of the output's largest magnitude (summation order and libm against
// CUDA's math library); a bf16 or f16 result may round the other way once
// (one unit in the last place: 2^-8 and 2^-11 relative), so 2^-7 and 2^-10
// of the largest magnitude; masks and indices exactly. Skipped, with a
// message, without a GPU; the same cases run the CPU backend against
// itself everywhere (exact), which checks the harness and that the CPU
// kernels take every case, and WeftCudaEmulatorTests runs them against the
// CUDA backend built over the CUDA emulator (its kernels run on the CPU). The cases: CudaConformanceTest.cpp (elementwise,
// movement, updates), CudaNetworkConformanceTest.cpp (norms, reductions,
// gathers, convolutions, pooling) and CudaLossConformanceTest.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_RUNTIME_CUDACONFORMANCE_H
#define WEFT_TEST_UNIT_RUNTIME_CUDACONFORMANCE_H

#include "weft/runtime/Backend.h"

#include "../../../runtime/backends/cuda/CudaKernels.h"
#include "../../../runtime/kernels/Fused.h"
#include "../../../runtime/kernels/Half.h"
#include "../../../runtime/kernels/Kernel.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

namespace weft::rt::conformance {

inline bool gpuPresent() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

/// One kernel call: its operand types, attributes, the outputs that update
/// an input in place (output -> input), inputs that must be positive.
struct Case {
  std::string kernel;
  std::vector<TensorType> in, out;
  KernelAttrs attrs;
  std::map<size_t, size_t> inPlace;
  std::set<size_t> positive, exact;
  /// Integer (or bool) inputs, and float ones listed here: whole numbers
  /// drawn uniformly from [0, bound).
  std::map<size_t, int64_t> below;
  int64_t step = 0;
};

/// The dtypes compared within a tolerance; the rest exactly.
inline bool compared(DType d) {
  return d == DType::F32 || d == DType::BF16 || d == DType::F16;
}

inline double toDouble(const char *p, DType d) {
  switch (d) {
  case DType::F32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return fromBF16(v);
  }
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return fromF16(v);
  }
  default:
    ADD_FAILURE() << "unexpected dtype " << dtypeName(d);
    return 0;
  }
}

inline void fromDouble(char *p, DType d, double v) {
  if (d == DType::F32) {
    float f = float(v);
    std::memcpy(p, &f, 4);
  } else {
    uint16_t bits = d == DType::BF16 ? toBF16(float(v)) : toF16(float(v));
    std::memcpy(p, &bits, 2);
  }
}

/// Random input bytes: uniform in [-2, 2] ([0.1, 2] where positive), the
/// loss scaler [1024, 0, 0] and found_inf 0 where `exact` says so.
inline std::vector<std::string> inputs(const Case &c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> any(-2, 2), pos(0.1, 2);
  std::vector<std::string> out;
  for (size_t k = 0; k < c.in.size(); ++k) {
    const TensorType &t = c.in[k];
    std::string bytes(t.bytes(), '\0');
    if (!compared(t.dtype)) {
      std::uniform_int_distribution<int64_t> draw(0, c.below.at(k) - 1);
      for (int64_t i = 0; i < t.numel(); ++i) {
        int64_t v = draw(rng);
        std::memcpy(bytes.data() + i * dtypeSize(t.dtype), &v,
                    dtypeSize(t.dtype)); // little-endian: the low bytes
      }
      out.push_back(std::move(bytes));
      continue;
    }
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = c.positive.count(k) ? pos(rng) : any(rng);
      if (c.below.count(k))
        v = double(
            std::uniform_int_distribution<int64_t>(0, c.below.at(k) - 1)(rng));
      if (c.exact.count(k))
        v = t.numel() == 3 && i == 0 ? 1024.0 : 0.0;
      fromDouble(bytes.data() + i * dtypeSize(t.dtype), t.dtype, v);
    }
    out.push_back(std::move(bytes));
  }
  return out;
}

/// The kernels runOn has run, on either backend: after a whole run every
/// CUDA kernel must be among them (CudaConformanceTest.cpp's coverage
/// check), or a kernel would go unchecked on the GPU.
inline std::set<std::string> &kernelsRun() {
  static std::set<std::string> run;
  return run;
}

/// Runs `c` on `backend`; returns the outputs' bytes. The arena starts
/// all 0xFF bytes (NaN in every float format), as a plan's reused buffers
/// hold a former tenant's bytes: a kernel that reads an output before it
/// writes it gives NaN (expectMatches fails on any). Each buffer is
/// followed by a 64-byte gap, and after the run every byte outside the
/// outputs must be as it was: a kernel that writes past its output, into
/// a gap or an input, fails the case.
inline std::vector<std::string> runOn(Backend &backend, const Case &c,
                                      const std::vector<std::string> &in) {
  kernelsRun().insert(c.kernel);
  // 64-byte aligned, as a plan's buffers are (weftc's kAlignment), and no
  // more: the first at 64, so libraries that assume wider alignment
  // (cuBLASLt's heuristic assumes 256 unless told) are held to the plan's.
  std::vector<int64_t> offsets;
  int64_t size = 64;
  auto place = [&](int64_t bytes) {
    offsets.push_back(size);
    size += (std::max<int64_t>(bytes, 1) + 63) / 64 * 64 + 64;
  };
  for (const TensorType &t : c.in)
    place(t.bytes());
  for (size_t o = 0; o < c.out.size(); ++o)
    if (c.inPlace.count(o))
      offsets.push_back(offsets[c.inPlace.at(o)]);
    else
      place(c.out[o].bytes());
  char *arena = static_cast<char *>(backend.allocateArena(size));
  std::string before(size, '\xFF');
  for (size_t k = 0; k < c.in.size(); ++k)
    before.replace(offsets[k], in[k].size(), in[k]);
  backend.upload(arena, before.data(), size);
  KernelContext ctx{7, c.step, 0, 0};
  KernelCall call{c.kernel, {}, {}, c.attrs, ctx};
  for (size_t k = 0; k < c.in.size(); ++k)
    call.in.push_back({arena + offsets[k], c.in[k].dtype, c.in[k].shape});
  for (size_t o = 0; o < c.out.size(); ++o)
    call.out.push_back(
        {arena + offsets[c.in.size() + o], c.out[o].dtype, c.out[o].shape});
  backend.launch(call);
  backend.synchronize();
  std::string after(size, '\0');
  backend.download(after.data(), arena, size);
  backend.freeArena(arena);
  std::vector<std::string> out;
  std::vector<bool> written(size, false);
  for (size_t o = 0; o < c.out.size(); ++o) {
    int64_t at = offsets[c.in.size() + o], bytes = c.out[o].bytes();
    out.push_back(after.substr(at, bytes));
    std::fill(written.begin() + at, written.begin() + at + bytes, true);
  }
  int64_t stray = 0, first = -1;
  for (int64_t i = 0; i < size; ++i)
    if (!written[i] && after[i] != before[i]) {
      ++stray;
      first = first < 0 ? i : first;
    }
  EXPECT_EQ(stray, 0) << c.kernel << " on " << backend.name()
                      << " wrote outside its outputs, first at arena byte "
                      << first;
  return out;
}

/// `bytes` of `t` cast to `to`, rounded to nearest even (weft's casts), on
/// `backend`: the cast chains the mixed-precision checks compare with.
inline std::string castOn(Backend &backend, TensorType t,
                          const std::string &bytes, DType to) {
  Case c{"cast", {t}, {{to, t.shape}}};
  c.attrs.set("to", std::string(dtypeName(to)));
  c.attrs.set("nearest_even", true);
  return runOn(backend, c, {bytes})[0];
}

inline double tolerance(DType d) {
  return d == DType::F32 ? 1e-5 : d == DType::BF16 ? 0x1p-7 : 0x1p-10;
}

/// `got` against `want`, both of type `t`: floats within tolerance(dtype)
/// of want's largest magnitude, the rest exactly; `what` names it.
inline void expectMatches(const TensorType &t, const std::string &got,
                          const std::string &want, const std::string &what) {
  DType d = t.dtype;
  if (!compared(d)) { // masks, indices: exactly
    EXPECT_EQ(got, want) << what << " (" << typeString(t) << ")";
    return;
  }
  int64_t n = t.numel(), size = dtypeSize(d), nans = 0;
  double scale = 1e-30, worst = 0;
  for (int64_t i = 0; i < n; ++i)
    scale = std::max(scale, std::fabs(toDouble(want.data() + i * size, d)));
  for (int64_t i = 0; i < n; ++i) {
    double g = toDouble(got.data() + i * size, d),
           w = toDouble(want.data() + i * size, d);
    if (std::isnan(g) || std::isnan(w))
      ++nans; // runOn's poison read back, or a bad value either way
    else
      worst = std::max(worst, std::fabs(g - w));
  }
  EXPECT_EQ(nans, 0) << what << " (" << typeString(t) << "): NaN outputs";
  EXPECT_LE(worst, tolerance(d) * scale)
      << what << " (" << typeString(t) << ")";
}

inline void expectConforms(const Case &c, Backend &gpu) {
  auto cpu = createCpuBackend();
  std::vector<std::string> in = inputs(c, 1);
  std::vector<std::string> want = runOn(*cpu, c, in), got = runOn(gpu, c, in);
  for (size_t o = 0; o < c.out.size(); ++o)
    expectMatches(c.out[o], got[o], want[o],
                  c.kernel + " output " + std::to_string(o));
}

inline std::vector<DType> floats() {
  return {DType::F32, DType::BF16, DType::F16};
}

/// The ops whose record declares a CUDA kernel (Ops.def: CpuCuda) that the
/// CUDA kernel table lacks, sorted.
inline std::vector<std::string> cpuKernelsCudaLacks() {
  std::vector<std::string> missing;
  for (const ops::OpRecord &r : ops::opRecords())
    if (r.backends == ops::Backends::CpuCuda && !cuda::kernelTable().find(r.op))
      missing.emplace_back(r.mnemonic);
  std::sort(missing.begin(), missing.end());
  return missing;
}

/// The backend under test: "cuda", "emulator" (the CUDA backend built
/// against the CUDA emulator, WeftCudaEmulatorTests: its own kernels run on
/// the CPU), or "cpu" (the CPU against itself: checks this harness, its
/// cases and the CPU kernels' acceptance of them on every machine).
class CudaConformance : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (GetParam() == "cpu") {
      gpu = createCpuBackend();
      return;
    }
    if (!gpuPresent())
      GTEST_SKIP() << "no GPU on this machine: the CUDA kernels were "
                      "compiled, not run";
    gpu = createCudaBackend(0);
  }
  /// Those of `kernels` the backend under test lacks, space-separated.
  std::string lacking(std::initializer_list<const char *> kernels) const {
    std::string missing;
    for (const char *kernel : kernels)
      if (!gpu->hasKernel(kernel))
        missing += std::string(" ") + kernel;
    return missing;
  }
  std::unique_ptr<Backend> gpu;
};

/// Skips a case whose kernels are cuDNN's where the backend under test
/// lacks them: a build without cuDNN has no convolutions or batch norm,
/// one without its frontend (and the emulator) no fused attention.
#define WEFT_NEEDS_KERNELS(...)                                                \
  if (std::string missing = lacking({__VA_ARGS__}); !missing.empty())          \
  GTEST_SKIP() << GetParam() << " has no" << missing                           \
               << " (cuDNN's kernels: not emulated, or not built)"

} // namespace weft::rt::conformance

#endif // WEFT_TEST_UNIT_RUNTIME_CUDACONFORMANCE_H
