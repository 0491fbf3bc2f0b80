//===- CudaConformanceTest.cpp - every CUDA kernel against the CPU's ------===//
//
// Each kernel the CUDA backend implements runs on random inputs through
// both backends (the same Backend interface: arena, upload, launch,
// download) and the outputs are compared. Tolerances per dtype: f32 within
// 1e-5 of the output's largest magnitude (summation order and libm against
// CUDA's math library); a bf16 or f16 result may round the other way once
// (one unit in the last place: 2^-8 and 2^-11 relative), so 2^-7 and 2^-10
// of the largest magnitude. Skipped, with a message, without a GPU; the
// same cases run the CPU backend against itself everywhere (exact), which
// checks the harness and that the CPU kernels take every case.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"

#include "../../../runtime/backends/cuda/CudaKernels.h"
#include "../../../runtime/kernels/Half.h"
#include "../../../runtime/kernels/Kernel.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>

using namespace weft::rt;

namespace {

bool gpuPresent() {
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
bool compared(DType d) {
  return d == DType::F32 || d == DType::BF16 || d == DType::F16;
}

double toDouble(const char *p, DType d) {
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

void fromDouble(char *p, DType d, double v) {
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
std::vector<std::string> inputs(const Case &c, uint32_t seed) {
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

/// Runs `c` on `backend`; returns the outputs' bytes.
std::vector<std::string> runOn(Backend &backend, const Case &c,
                               const std::vector<std::string> &in) {
  std::vector<int64_t> offsets;
  int64_t size = 0;
  auto place = [&](int64_t bytes) {
    offsets.push_back(size);
    size += (bytes + 255) / 256 * 256;
  };
  for (const TensorType &t : c.in)
    place(t.bytes());
  for (size_t o = 0; o < c.out.size(); ++o)
    if (c.inPlace.count(o))
      offsets.push_back(offsets[c.inPlace.at(o)]);
    else
      place(c.out[o].bytes());
  char *arena = static_cast<char *>(backend.allocateArena(size));
  KernelContext ctx{7, c.step, 0, 0};
  KernelCall call{c.kernel, {}, {}, c.attrs, ctx};
  for (size_t k = 0; k < c.in.size(); ++k) {
    backend.upload(arena + offsets[k], in[k].data(), in[k].size());
    call.in.push_back({arena + offsets[k], c.in[k].dtype, c.in[k].shape});
  }
  for (size_t o = 0; o < c.out.size(); ++o)
    call.out.push_back(
        {arena + offsets[c.in.size() + o], c.out[o].dtype, c.out[o].shape});
  backend.launch(call);
  backend.synchronize();
  std::vector<std::string> out;
  for (size_t o = 0; o < c.out.size(); ++o) {
    std::string bytes(c.out[o].bytes(), '\0');
    backend.download(bytes.data(), call.out[o].data, bytes.size());
    out.push_back(std::move(bytes));
  }
  backend.freeArena(arena);
  return out;
}

double tolerance(DType d) {
  return d == DType::F32 ? 1e-5 : d == DType::BF16 ? 0x1p-7 : 0x1p-10;
}

void expectConforms(const Case &c, Backend &gpu) {
  auto cpu = createCpuBackend();
  std::vector<std::string> in = inputs(c, 1);
  std::vector<std::string> want = runOn(*cpu, c, in), got = runOn(gpu, c, in);
  for (size_t o = 0; o < c.out.size(); ++o) {
    DType d = c.out[o].dtype;
    if (!compared(d)) { // masks, indices: exactly
      EXPECT_EQ(got[o], want[o])
          << c.kernel << " output " << o << " (" << typeString(c.out[o]) << ")";
      continue;
    }
    int64_t n = c.out[o].numel(), size = dtypeSize(d);
    double scale = 1e-30, worst = 0;
    for (int64_t i = 0; i < n; ++i)
      scale =
          std::max(scale, std::fabs(toDouble(want[o].data() + i * size, d)));
    for (int64_t i = 0; i < n; ++i)
      worst =
          std::max(worst, std::fabs(toDouble(got[o].data() + i * size, d) -
                                    toDouble(want[o].data() + i * size, d)));
    EXPECT_LE(worst, tolerance(d) * scale)
        << c.kernel << " output " << o << " (" << typeString(c.out[o]) << ")";
  }
}

std::vector<DType> floats() { return {DType::F32, DType::BF16, DType::F16}; }

/// The backend under test: "cuda", or "cpu" (the CPU against itself:
/// checks this harness, its cases and the CPU kernels' acceptance of them
/// on every machine).
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
  std::unique_ptr<Backend> gpu;
};

TEST_P(CudaConformance, Unary) {
  for (const char *kernel : {"sqrt", "reciprocal", "neg", "exp", "log", "gelu",
                             "gelu_tanh", "erf", "tanh", "relu", "sigmoid"})
    for (DType d : floats()) {
      Case c{kernel, {{d, {7, 129}}}, {{d, {7, 129}}}};
      if (std::string(kernel) == "sqrt" || std::string(kernel) == "log" ||
          std::string(kernel) == "reciprocal")
        c.positive = {0};
      expectConforms(c, *gpu);
    }
}

TEST_P(CudaConformance, BinaryBroadcasts) {
  for (const char *kernel : {"add", "sub", "mul", "div"})
    for (DType d : floats()) {
      Case c{kernel, {{d, {4, 1, 33}}, {d, {5, 1}}}, {{d, {4, 5, 33}}}};
      if (std::string(kernel) == "div")
        c.positive = {1};
      expectConforms(c, *gpu);
    }
}

/// Along the last axis (attention's) and a middle one (rows strided).
TEST_P(CudaConformance, Softmax) {
  for (const char *kernel : {"softmax", "log_softmax"})
    for (DType d : floats())
      for (int64_t axis : {2, 1}) {
        Case c{kernel, {{d, {3, 17, 40}}}, {{d, {3, 17, 40}}}};
        c.attrs.set("axis", axis);
        expectConforms(c, *gpu);
      }
}

TEST_P(CudaConformance, Casts) {
  for (DType from : floats())
    for (DType to : floats())
      for (bool nearest : {false, true}) {
        Case c{"cast", {{from, {1000}}}, {{to, {1000}}}};
        c.attrs.set("to", std::string(dtypeName(to)));
        c.attrs.set("nearest_even", nearest);
        expectConforms(c, *gpu);
      }
}

TEST_P(CudaConformance, Matmul) {
  // Plain, a weight shared by the batch, equal batches, a broadcast batch,
  // a vector on either side.
  std::vector<std::array<std::vector<int64_t>, 3>> shapes = {
      {{{33, 70}, {70, 45}, {33, 45}}},
      {{{3, 33, 70}, {70, 45}, {3, 33, 45}}},
      {{{4, 17, 32}, {4, 32, 9}, {4, 17, 9}}},
      {{{2, 1, 8, 16}, {3, 16, 5}, {2, 3, 8, 5}}},
      {{{16}, {16, 5}, {5}}},
      {{{4, 16}, {16}, {4}}}};
  for (const auto &[a, b, y] : shapes)
    for (DType d : floats())
      expectConforms(Case{"matmul", {{d, a}, {d, b}}, {{d, y}}}, *gpu);
}

TEST_P(CudaConformance, GemmTransposesAndBias) {
  for (DType d : floats())
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        std::vector<int64_t> a =
            ta ? std::vector<int64_t>{40, 24} : std::vector<int64_t>{24, 40};
        std::vector<int64_t> b =
            tb ? std::vector<int64_t>{36, 40} : std::vector<int64_t>{40, 36};
        Case c{"gemm", {{d, a}, {d, b}, {d, {36}}}, {{d, {24, 36}}}};
        c.attrs.set("transA", ta);
        c.attrs.set("transB", tb);
        c.attrs.set("alpha", 0.5);
        c.attrs.set("beta", 2.0);
        expectConforms(c, *gpu);
      }
}

/// AdamW and SGD: plain f32, and 16-bit with a master (and loss-scaled).
TEST_P(CudaConformance, Updates) {
  TensorType f32{DType::F32, {1000}}, scaler{DType::F32, {3}},
      found{DType::F32, {}};
  for (DType d : floats()) {
    TensorType p{d, {1000}};
    bool master = d != DType::F32;
    for (bool scaled : {false, true}) {
      if (scaled && !master)
        continue;
      Case adamw{"adamw", {p, p, f32, f32}, {p, f32, f32}};
      adamw.inPlace = {{0, 0}, {1, 2}, {2, 3}};
      adamw.positive = {3}; // the second moment
      for (auto [k, v] : {std::pair{"lr", 1e-2},
                          {"beta1", 0.9},
                          {"beta2", 0.999},
                          {"eps", 1e-8},
                          {"weight_decay", 0.01}})
        adamw.attrs.set(k, v);
      Case sgd{"sgd", {p, p, f32}, {p, f32}};
      sgd.inPlace = {{0, 0}, {1, 2}};
      for (auto [k, v] :
           {std::pair{"lr", 1e-1}, {"momentum", 0.9}, {"weight_decay", 1e-4}})
        sgd.attrs.set(k, v);
      sgd.attrs.set("nesterov", true);
      for (Case *c : {&adamw, &sgd}) {
        c->step = 3;
        if (master) {
          c->in.push_back(f32);
          c->out.push_back(f32);
          c->inPlace[c->out.size() - 1] = c->in.size() - 1;
        }
        if (scaled) {
          c->in.push_back(scaler);
          c->in.push_back(found);
          c->exact = {c->in.size() - 2, c->in.size() - 1};
        }
        expectConforms(*c, *gpu);
      }
    }
  }
}

/// Bytes moved exactly, in every element size the plans use.
TEST_P(CudaConformance, Movement) {
  for (DType d : {DType::F32, DType::BF16, DType::F16}) {
    Case transpose{"transpose", {{d, {2, 5, 3, 7}}}, {{d, {2, 3, 5, 7}}}};
    transpose.attrs.set("perm", std::vector<int64_t>{0, 2, 1, 3});
    Case matrix{"transpose", {{d, {33, 65}}}, {{d, {65, 33}}}};
    matrix.attrs.set("perm", std::vector<int64_t>{1, 0});
    Case expand{"expand", {{d, {3, 1}}}, {{d, {2, 3, 4}}}};
    expand.attrs.set("shape", std::vector<int64_t>{2, 3, 4});
    Case slice{"slice", {{d, {6, 9}}}, {{d, {3, 2}}}};
    slice.attrs.set("starts", std::vector<int64_t>{1, 8});
    slice.attrs.set("ends", std::vector<int64_t>{6, 2});
    slice.attrs.set("steps", std::vector<int64_t>{2, -4});
    Case concat{"concat",
                {{d, {2, 3, 4}}, {d, {2, 1, 4}}, {d, {2, 5, 4}}},
                {{d, {2, 9, 4}}}};
    concat.attrs.set("axis", int64_t(1));
    Case split{"split",
               {{d, {2, 9, 4}}},
               {{d, {2, 3, 4}}, {d, {2, 1, 4}}, {d, {2, 5, 4}}}};
    split.attrs.set("axis", int64_t(1));
    split.attrs.set("sizes", std::vector<int64_t>{3, 1, 5});
    for (const Case *c :
         {&transpose, &matrix, &expand, &slice, &concat, &split})
      expectConforms(*c, *gpu);
  }
}

TEST_P(CudaConformance, FoundInfAndTheLossScale) {
  for (DType d : floats())
    expectConforms(
        Case{"found_inf", {{d, {500}}, {d, {7}}}, {{DType::F32, {}}}}, *gpu);
  Case update{"update_loss_scale",
              {{DType::F32, {3}}, {DType::F32, {}}},
              {{DType::F32, {3}}}};
  update.inPlace = {{0, 0}};
  update.exact = {0, 1};
  update.attrs.set("growth_factor", 2.0);
  update.attrs.set("backoff_factor", 0.5);
  update.attrs.set("growth_interval", int64_t(1));
  expectConforms(update, *gpu);
}

TEST_P(CudaConformance, ActivationGradients) {
  for (const char *kernel : {"relu_grad", "gelu_grad", "gelu_tanh_grad"})
    for (DType d : floats())
      expectConforms(
          Case{kernel, {{d, {7, 129}}, {d, {7, 129}}}, {{d, {7, 129}}}}, *gpu);
}

TEST_P(CudaConformance, ClipPowTrilu) {
  for (DType d : floats()) {
    TensorType x{d, {7, 129}};
    Case clip{"clip", {x}, {x}}, grad{"clip_grad", {x, x}, {x}};
    for (Case *c : {&clip, &grad}) {
      c->attrs.set("min", -0.5);
      c->attrs.set("max", 1.25);
      expectConforms(*c, *gpu);
    }
    Case pow{"pow", {{d, {4, 1, 33}}, {d, {5, 1}}}, {{d, {4, 5, 33}}}};
    pow.positive = {0}; // fractional exponents of positive bases
    expectConforms(pow, *gpu);
    for (bool upper : {false, true}) {
      Case trilu{"trilu", {{d, {3, 9, 7}}}, {{d, {3, 9, 7}}}};
      trilu.attrs.set("upper", upper);
      trilu.attrs.set("k", int64_t(upper ? 1 : -2));
      expectConforms(trilu, *gpu);
    }
  }
}

TEST_P(CudaConformance, WhereBroadcasts) {
  for (DType d : floats()) {
    Case c{"where",
           {{DType::Bool, {1, 1, 8, 8}}, {d, {2, 3, 8, 8}}, {d, {}}},
           {{d, {2, 3, 8, 8}}}};
    c.below = {{0, 2}};
    expectConforms(c, *gpu);
  }
}

/// The masks are the CPU's bit for bit (DropoutMask.h), whole and as a
/// tensor-parallel shard.
TEST_P(CudaConformance, Dropout) {
  for (DType d : floats())
    for (bool shard : {false, true}) {
      Case c{"dropout",
             {{d, {4, 33, 10}}},
             {{d, {4, 33, 10}}, {DType::Bool, {4, 33, 10}}}};
      c.attrs.set("ratio", 0.25);
      c.attrs.set("training", true);
      c.attrs.set("rng_id", int64_t(3));
      if (shard) {
        c.attrs.set("shard_dim", int64_t(1));
        c.attrs.set("shard_blocks", int64_t(3));
        c.attrs.set("shard_count", int64_t(2));
        c.attrs.set("shard_index", int64_t(1));
      }
      c.step = 5;
      expectConforms(c, *gpu);
      Case grad{"dropout_grad",
                {{d, {4, 33, 10}}, {DType::Bool, {4, 33, 10}}},
                {{d, {4, 33, 10}}}};
      grad.below = {{1, 2}};
      grad.attrs.set("ratio", 0.25);
      expectConforms(grad, *gpu);
    }
}

TEST_P(CudaConformance, SoftmaxGradients) {
  for (const char *kernel : {"softmax_grad", "log_softmax_grad"})
    for (DType d : floats())
      for (int64_t axis : {2, 1}) {
        Case c{
            kernel, {{d, {3, 17, 40}}, {d, {3, 17, 40}}}, {{d, {3, 17, 40}}}};
        c.attrs.set("axis", axis);
        expectConforms(c, *gpu);
      }
}

/// Over the last dim, and over the last two (one row of 5 x 48).
TEST_P(CudaConformance, LayerNorm) {
  TensorType stats6{DType::F32, {6, 1, 1}}, stats30{DType::F32, {6, 5, 1}};
  for (DType d : floats())
    for (int64_t axis : {2, 1}) {
      std::vector<int64_t> normalized =
          axis == 2 ? std::vector<int64_t>{48} : std::vector<int64_t>{5, 48};
      TensorType x{d, {6, 5, 48}}, scale{d, normalized};
      TensorType stats = axis == 2 ? stats30 : stats6;
      Case forward{"layer_norm", {x, scale, scale}, {x, stats, stats}};
      forward.attrs.set("axis", axis);
      forward.attrs.set("epsilon", 1e-5);
      expectConforms(forward, *gpu);
      Case backward{
          "layer_norm_grad", {x, scale, stats, stats, x}, {x, scale, scale}};
      backward.attrs.set("axis", axis);
      backward.positive = {3}; // 1 / std
      expectConforms(backward, *gpu);
    }
  // Scale and bias broadcast within the normalised dims [5, 48].
  for (DType d : floats()) {
    TensorType x{d, {6, 5, 48}}, stats{DType::F32, {6, 1, 1}};
    Case broadcast{
        "layer_norm", {x, {d, {48}}, {d, {5, 1}}}, {x, stats, stats}};
    broadcast.attrs.set("axis", int64_t(1));
    broadcast.attrs.set("epsilon", 1e-5);
    expectConforms(broadcast, *gpu);
  }
}

/// Every reduction, an ignored label, class weights, samples with and
/// without trailing dims.
TEST_P(CudaConformance, Losses) {
  for (DType d : floats())
    for (std::vector<int64_t> scores :
         {std::vector<int64_t>{40, 11}, std::vector<int64_t>{3, 11, 4}})
      for (const char *reduction : {"mean", "sum", "none"})
        for (bool weighted : {false, true}) {
          std::vector<int64_t> labels = {scores[0]};
          labels.insert(labels.end(), scores.begin() + 2, scores.end());
          std::vector<int64_t> loss = reduction == std::string("none")
                                          ? labels
                                          : std::vector<int64_t>{};
          TensorType s{d, scores}, l{DType::I64, labels}, w{d, {11}};
          Case sce{"softmax_cross_entropy", {s, l}, {{d, loss}, s}};
          Case nll{"nll_loss", {s, l}, {{d, loss}}};
          Case sceGrad{"softmax_cross_entropy_grad", {s, l, {d, loss}}, {s}};
          Case nllGrad{"nll_loss_grad", {s, l, {d, loss}}, {s}};
          for (Case *c : {&sce, &nll, &sceGrad, &nllGrad}) {
            c->below = {{1, 11}};
            c->attrs.set("reduction", std::string(reduction));
            c->attrs.set("ignore_index", int64_t(2));
            if (weighted) {
              c->in.push_back(w);
              c->positive.insert(c->in.size() - 1);
            }
            expectConforms(*c, *gpu);
          }
        }
}

TEST_P(CudaConformance, Reductions) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{0, 1}, {9}},
      {{1}, {5, 9}},
      {{2}, {5, 7}},
      {{0, 1, 2}, {}},
      {{0, 2}, {7}}};
  for (const char *kernel : {"reduce_sum", "reduce_mean", "reduce_max"})
    for (DType d : floats())
      for (const auto &[axes, out] : cases) {
        Case c{kernel, {{d, {5, 7, 9}}}, {{d, out}}};
        c.attrs.set("axes", axes);
        c.attrs.set("keepdims", false);
        expectConforms(c, *gpu);
      }
  Case rows{"reduce_sum", {{DType::F32, {1000, 3}}}, {{DType::F32, {3}}}};
  rows.attrs.set("axes", std::vector<int64_t>{0}); // chunks of 256 rows
  rows.attrs.set("keepdims", false);
  expectConforms(rows, *gpu);
}

/// An embedding's lookup and its scatter-add, indices repeating (10 rows
/// of 50 drawn), along axis 0 and 1.
TEST_P(CudaConformance, GatherAndItsGradient) {
  for (DType d : floats())
    for (DType index : {DType::I64, DType::I32})
      for (int64_t axis : {0, 1}) {
        std::vector<int64_t> data = axis == 0 ? std::vector<int64_t>{50, 16}
                                              : std::vector<int64_t>{3, 50, 4};
        std::vector<int64_t> gathered = axis == 0
                                            ? std::vector<int64_t>{3, 7, 16}
                                            : std::vector<int64_t>{3, 3, 7, 4};
        Case forward{"gather", {{d, data}, {index, {3, 7}}}, {{d, gathered}}};
        forward.attrs.set("axis", axis);
        forward.below = {{1, 10}};
        expectConforms(forward, *gpu);
        Case backward{
            "gather_grad", {{d, gathered}, {index, {3, 7}}}, {{d, data}}};
        backward.attrs.set("axis", axis);
        backward.attrs.set("shape", data);
        backward.below = {{1, 10}};
        expectConforms(backward, *gpu);
      }
}

/// Megatron-LM's vocabulary-parallel embedding and cross-entropy on a
/// shard holding classes [20, 30) of 40: labels on this shard and others.
TEST_P(CudaConformance, VocabParallel) {
  for (DType d : floats()) {
    TensorType table{d, {10, 8}}, ids{DType::I64, {3, 5}};
    Case lookup{"vocab_parallel_gather", {table, ids}, {{d, {3, 5, 8}}}};
    lookup.attrs.set("start", int64_t(20));
    Case scatter{"vocab_parallel_gather_grad", {{d, {3, 5, 8}}, ids}, {table}};
    scatter.attrs.set("start", int64_t(20));
    scatter.attrs.set("rows", int64_t(10));
    TensorType scores{d, {12, 10}}, max{d, {12, 1}}, stats{d, {12, 2}},
        labels{DType::I64, {12}};
    Case statsCase{
        "vocab_parallel_cross_entropy_stats", {scores, max, labels}, {stats}};
    statsCase.attrs.set("start", int64_t(20));
    Case loss{"vocab_parallel_cross_entropy",
              {scores, max, stats, labels},
              {{d, {}}, scores}};
    loss.positive = {2}; // sums of exponentials
    Case grad{"vocab_parallel_cross_entropy_grad",
              {scores, labels, {d, {}}},
              {scores}};
    grad.attrs.set("start", int64_t(20));
    for (Case *c : {&loss, &grad})
      c->attrs.set("ignore_index", int64_t(22));
    lookup.below = scatter.below = {{1, 40}};
    statsCase.below = {{2, 40}};
    loss.below = {{3, 40}};
    grad.below = {{1, 40}};
    for (const Case *c : {&lookup, &scatter, &statsCase, &loss, &grad})
      expectConforms(*c, *gpu);
  }
}

/// cuDNN's convolutions: 2-D grouped and strided with a bias, 1-D dilated;
/// the transpose and the weight gradient of the 2-D one.
TEST_P(CudaConformance, Convolutions) {
  for (DType d : floats()) {
    auto window = [](Case &c, std::vector<int64_t> strides,
                     std::vector<int64_t> pads, std::vector<int64_t> dilations,
                     int64_t group) {
      c.attrs.set("strides", strides);
      c.attrs.set("pads", pads);
      c.attrs.set("dilations", dilations);
      c.attrs.set("group", group);
    };
    TensorType x{d, {2, 4, 9, 9}}, w{d, {6, 2, 3, 3}}, y{d, {2, 6, 5, 5}};
    Case conv{"conv", {x, w, {d, {6}}}, {y}};
    window(conv, {2, 2}, {1, 1, 1, 1}, {1, 1}, 2);
    Case line{"conv", {{d, {2, 3, 11}}, {d, {4, 3, 3}}}, {{d, {2, 4, 9}}}};
    window(line, {1}, {1, 1}, {2}, 1);
    Case transpose{"conv_transpose", {y, w}, {x}};
    window(transpose, {2, 2}, {1, 1, 1, 1}, {1, 1}, 2);
    transpose.attrs.set("output_padding", std::vector<int64_t>{0, 0});
    Case weight{"conv_weight_grad", {x, y}, {w}};
    window(weight, {2, 2}, {1, 1, 1, 1}, {1, 1}, 2);
    weight.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
    for (const Case *c : {&conv, &line, &transpose, &weight})
      expectConforms(*c, *gpu);
  }
}

/// Training-mode batch norm (f32: mixed precision keeps norms in f32) and
/// its gradient; the running statistics in place.
TEST_P(CudaConformance, BatchNorm) {
  TensorType x{DType::F32, {4, 3, 5, 5}}, channel{DType::F32, {3}};
  Case forward{"batch_norm",
               {x, channel, channel, channel, channel},
               {x, channel, channel}};
  forward.inPlace = {{1, 3}, {2, 4}};
  forward.positive = {4};
  forward.attrs.set("epsilon", 1e-5);
  forward.attrs.set("momentum", 0.9);
  forward.attrs.set("training", true);
  forward.attrs.set("unbiased_running_var", true);
  expectConforms(forward, *gpu);
  Case backward{"batch_norm_grad",
                {x, channel, channel, channel, x},
                {x, channel, channel}};
  backward.positive = {3};
  backward.attrs.set("epsilon", 1e-5);
  backward.attrs.set("training", true);
  expectConforms(backward, *gpu);
}

/// ResNet's stem pooling (3x3, stride 2, pad 1): windows overlap, so the
/// gradients gather from several windows per input; average pooling with
/// and without the padding counted, and a ceil_mode overhang.
TEST_P(CudaConformance, Pooling) {
  for (DType d : floats())
    for (bool max : {true, false})
      for (bool includePad : {false, true}) {
        if (max && includePad)
          continue;
        TensorType x{d, {2, 3, 9, 9}}, y{d, {2, 3, 5, 5}};
        std::string kernel = max ? "max_pool" : "avg_pool";
        Case forward{kernel, {x}, {y}}, backward{kernel + "_grad", {x, y}, {x}};
        for (Case *c : {&forward, &backward}) {
          c->attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
          c->attrs.set("strides", std::vector<int64_t>{2, 2});
          c->attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
          if (max)
            c->attrs.set("dilations", std::vector<int64_t>{1, 1});
          else
            c->attrs.set("count_include_pad", includePad);
        }
        forward.attrs.set("ceil_mode", false);
        expectConforms(forward, *gpu);
        expectConforms(backward, *gpu);
      }
  // ceil_mode: 8 -> 4 windows of 3, stride 2, the last overhanging.
  for (DType d : floats()) {
    Case overhang{"avg_pool", {{d, {1, 2, 8, 8}}}, {{d, {1, 2, 4, 4}}}};
    overhang.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
    overhang.attrs.set("strides", std::vector<int64_t>{2, 2});
    overhang.attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
    overhang.attrs.set("ceil_mode", true);
    overhang.attrs.set("count_include_pad", true);
    expectConforms(overhang, *gpu);
  }
}

/// Nearest resize up by 2, by 1.5 and down by 2 under three coordinate
/// transforms, and its gradient (several outputs per input).
TEST_P(CudaConformance, Resize) {
  struct Geometry {
    int64_t in, out;
    double scale;
    const char *transform, *mode;
  };
  for (DType d : floats())
    for (Geometry g : {Geometry{4, 8, 2.0, "asymmetric", "floor"},
                       Geometry{4, 6, 1.5, "half_pixel", "round_prefer_floor"},
                       Geometry{8, 4, 0.5, "align_corners", "ceil"}}) {
      TensorType x{d, {1, 2, g.in, g.in}}, y{d, {1, 2, g.out, g.out}};
      Case forward{"resize", {x}, {y}}, backward{"resize_grad", {x, y}, {x}};
      for (Case *c : {&forward, &backward}) {
        c->attrs.set("sizes", std::vector<int64_t>{1, 2, g.out, g.out});
        c->attrs.set("scales", std::vector<double>{1, 1, g.scale, g.scale});
        c->attrs.set("coordinate_transformation_mode",
                     std::string(g.transform));
        c->attrs.set("nearest_mode", std::string(g.mode));
        expectConforms(*c, *gpu);
      }
    }
}

/// Constant padding with a negative (cropping) side; equal on floats and
/// integers with broadcasting.
TEST_P(CudaConformance, PadAndEqual) {
  for (DType d : floats()) {
    Case pad{"pad", {{d, {3, 5, 4}}}, {{d, {4, 8, 3}}}};
    pad.attrs.set("pads", std::vector<int64_t>{1, 2, 0, 0, 1, -1});
    pad.attrs.set("value", 0.75);
    expectConforms(pad, *gpu);
    Case same{"equal", {{d, {4, 6}}, {d, {4, 6}}}, {{DType::Bool, {4, 6}}}};
    same.below = {{0, 3}, {1, 3}}; // whole numbers: some pairs equal
    expectConforms(same, *gpu);
  }
  Case ints{"equal",
            {{DType::I64, {4, 1, 6}}, {DType::I64, {5, 1}}},
            {{DType::Bool, {4, 5, 6}}}};
  ints.below = {{0, 3}, {1, 3}};
  expectConforms(ints, *gpu);
}

/// Every kernel of a transformer's training step (the gpt example's plans
/// at f32, bf16 and f16 with loss scaling, one rank) has a CUDA
/// implementation, so such a plan loads on the GPU (checked without one).
TEST(CudaKernelTable, CoversATransformerTrainingStep) {
  for (const char *kernel : {"adamw",
                             "add",
                             "cast",
                             "concat",
                             "div",
                             "dropout",
                             "dropout_grad",
                             "found_inf",
                             "gather",
                             "gather_grad",
                             "gelu",
                             "gelu_grad",
                             "gemm",
                             "layer_norm",
                             "layer_norm_grad",
                             "matmul",
                             "mul",
                             "reduce_sum",
                             "softmax",
                             "softmax_cross_entropy",
                             "softmax_cross_entropy_grad",
                             "softmax_grad",
                             "split",
                             "sub",
                             "transpose",
                             "update_loss_scale",
                             "where"})
    EXPECT_TRUE(cuda::kernelTable().count(kernel)) << kernel;
}

/// Every CPU kernel has a CUDA one (cuDNN's only when the build found it),
/// so any plan the CPU runs loads on the GPU.
TEST(CudaKernelTable, HasEveryCpuKernel) {
  std::vector<std::string> missing;
  for (const auto &[name, fn] : kernelTable())
    if (!cuda::kernelTable().count(name))
      missing.push_back(name);
  std::vector<std::string> lacking;
#ifndef WEFT_HAVE_CUDNN // built without cuDNN: its kernels
  lacking = {"batch_norm", "batch_norm_grad", "conv", "conv_transpose",
             "conv_weight_grad"};
#endif
  EXPECT_EQ(missing, lacking);
}

INSTANTIATE_TEST_SUITE_P(Backends, CudaConformance,
                         ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return info.param; });

} // namespace
