//===- CudaConformanceTest.cpp - elementwise, movement, update kernels ----===//
//
// The CUDA kernels of elementwise ops, casts, softmax, GEMMs, updates,
// movement and masks against the CPU's (the harness: CudaConformance.h),
// the suite's instantiation, and the CUDA kernel table's coverage.
//
//===----------------------------------------------------------------------===//

#include "CudaConformance.h"

#include "../../../runtime/backends/cuda/CudaKernels.h"
#include "../../../runtime/kernels/Fused.h"

using namespace weft::rt;
using namespace weft::rt::conformance;
namespace ops = weft::ops;

namespace {

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
  for (const char *kernel : {"add", "sub", "mul", "div", "max", "min"})
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

/// weft.matmul's transA/transB (the gradient rule's dY B^T and A^T dY):
/// equal batches (attention's [B, H] heads; cuBLASLt's strided batch), a
/// weight shared by the batch, a broadcast batch (a GEMM per matrix).
TEST_P(CudaConformance, MatmulReadsTransposedOperands) {
  // A and B as stored, for op(A) [.., 17, 32] and op(B) [.., 32, 9].
  struct Shapes {
    std::vector<int64_t> a, b, y;
  };
  for (DType d : floats())
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (const auto &[batchA, batchB, batchY] :
             std::vector<Shapes>{{{2, 3}, {2, 3}, {2, 3}},
                                 {{3}, {}, {3}},
                                 {{2, 1}, {3}, {2, 3}}}) {
          std::vector<int64_t> a = batchA, b = batchB, y = batchY;
          a.insert(a.end(), {ta ? 32 : 17, ta ? 17 : 32});
          b.insert(b.end(), {tb ? 9 : 32, tb ? 32 : 9});
          y.insert(y.end(), {17, 9});
          Case c{"matmul", {{d, a}, {d, b}}, {{d, y}}};
          c.attrs.set("transA", ta);
          c.attrs.set("transB", tb);
          expectConforms(c, *gpu);
        }
}

/// C broadcast: a [N] bias with beta 2 (broadcast into the output first),
/// and a Linear layer's bias, [N] or [1, N] with beta 1 (weft-fold-linear-
/// bias: cuBLASLt's bias epilogue).
TEST_P(CudaConformance, GemmTransposesAndBias) {
  for (DType d : floats())
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (double beta : {2.0, 1.0})
          for (bool row : {false, true}) {
            if (row && beta != 1.0)
              continue;
            std::vector<int64_t> a = ta ? std::vector<int64_t>{40, 24}
                                        : std::vector<int64_t>{24, 40};
            std::vector<int64_t> b = tb ? std::vector<int64_t>{36, 40}
                                        : std::vector<int64_t>{40, 36};
            std::vector<int64_t> c =
                row ? std::vector<int64_t>{1, 36} : std::vector<int64_t>{36};
            Case g{"gemm", {{d, a}, {d, b}, {d, c}}, {{d, {24, 36}}}};
            g.attrs.set("transA", ta);
            g.attrs.set("transB", tb);
            g.attrs.set("alpha", 0.5);
            g.attrs.set("beta", beta);
            expectConforms(g, *gpu);
          }
}

/// gemm_gelu_tanh and gemm_gelu_tanh_grad (weft-fold-gemm-gelu; on a GPU
/// cuBLASLt's GELU_AUX(_BIAS) and DGELU epilogues for 16-bit rows of a
/// multiple of 8, the two kernels otherwise: N 48 and 20 take each path)
/// give the gemm and the GELU (or its gradient) they replace: within the
/// dtype's tolerance (the epilogue applies the GELU before the product's
/// rounding), exactly on the CPU (the two kernels).
TEST_P(CudaConformance, GemmGeluIsTheGemmThenTheGelu) {
  KernelAttrs none;
  for (DType d : floats())
    for (int64_t n : {48, 20})
      for (bool bias : {false, true}) {
        std::string what = std::string(dtypeName(d)) + " N " +
                           std::to_string(n) + (bias ? " with bias" : "");
        TensorType x{d, {37, 24}}, w{d, {n, 24}}, y{d, {37, n}};
        Case fused{"gemm_gelu_tanh", {x, w}, {y, y}};
        if (bias)
          fused.in.push_back({d, {n}});
        fused.attrs.set("alpha", 1.0);
        fused.attrs.set("beta", 1.0);
        fused.attrs.set("transA", false);
        fused.attrs.set("transB", true);
        expectConforms(fused, *gpu);
        std::vector<std::string> in = inputs(fused, 14);
        std::vector<std::string> got = runOn(*gpu, fused, in);
        Case product = fused;
        product.kernel = "gemm";
        product.out = {y};
        std::string pre = runOn(*gpu, product, in)[0];
        std::string want = runOn(*gpu, Case{"gelu_tanh", {y}, {y}}, {pre})[0];
        expectMatches(y, got[1], pre, "pre-activation, " + what);
        expectMatches(y, got[0], want, "gelu, " + what);
        // The backward: dY [37, 16] times W2 [16, n], at the pre-activation.
        TensorType dy{d, {37, 16}}, w2{d, {16, n}};
        Case grad{"gemm_gelu_tanh_grad", {dy, w2, y}, {y}};
        grad.attrs.set("alpha", 1.0);
        grad.attrs.set("transA", false);
        grad.attrs.set("transB", false);
        expectConforms(grad, *gpu);
        std::vector<std::string> gradIn = inputs(grad, 15);
        std::string dx = runOn(*gpu, grad, gradIn)[0];
        Case plain{"gemm", {dy, w2}, {y}};
        plain.attrs = grad.attrs;
        plain.attrs.set("beta", 0.0);
        std::string dg = runOn(*gpu, plain, {gradIn[0], gradIn[1]})[0];
        std::string wantDx = runOn(*gpu, Case{"gelu_tanh_grad", {y, y}, {y}},
                                   {gradIn[2], dg})[0];
        expectMatches(y, dx, wantDx, "gelu gradient, " + what);
        if (GetParam() == "cpu") {
          EXPECT_EQ(got[1], pre) << what;
          EXPECT_EQ(got[0], want) << what;
          EXPECT_EQ(dx, wantDx) << what;
        }
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

enum class Launch { None, OneByOne, Grouped };

/// `cases`, updates whose outputs all update their inputs in place, in one
/// arena (the scaled ones share the first one's loss scaler and verdict, as
/// a plan's do), launched one by one, as one group or not at all; the
/// arena after.
std::string runUpdates(Backend &backend, const std::vector<Case> &cases,
                       Launch launch) {
  std::vector<std::vector<int64_t>> offsets;
  int64_t size = 0;
  for (const Case &c : cases) {
    offsets.emplace_back();
    for (const TensorType &t : c.in) {
      offsets.back().push_back(size);
      size += (t.bytes() + 255) / 256 * 256;
    }
  }
  char *arena = static_cast<char *>(backend.allocateArena(size));
  std::vector<KernelContext> contexts;
  for (size_t i = 0; i < cases.size(); ++i)
    contexts.push_back({7, cases[i].step, 0, int64_t(i)});
  std::vector<KernelCall> calls;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    std::vector<std::string> in = inputs(c, 30 + i);
    KernelCall call{c.kernel, {}, {}, c.attrs, contexts[i]};
    for (size_t k = 0; k < c.in.size(); ++k) {
      int64_t at = offsets[i][k];
      if (c.exact.count(k)) // the scaler and verdict: the first case's
        at = offsets[0][k - c.in.size() + cases[0].in.size()];
      backend.upload(arena + at, in[k].data(), in[k].size());
      call.in.push_back({arena + at, c.in[k].dtype, c.in[k].shape});
    }
    for (size_t o = 0; o < c.out.size(); ++o)
      call.out.push_back(call.in[c.inPlace.at(o)]);
    calls.push_back(std::move(call));
  }
  if (launch == Launch::Grouped)
    backend.launchGroup(calls);
  else if (launch == Launch::OneByOne)
    for (const KernelCall &call : calls)
      backend.launch(call);
  backend.synchronize();
  std::string bytes(size, '\0');
  backend.download(bytes.data(), arena, size);
  backend.freeArena(arena);
  return bytes;
}

/// A 16-bit update's f32 master (in place), then with `scaled` the loss
/// scaler and verdict the plan's scaled updates share (exact inputs).
void withMasterAndScaler(Case &c, bool scaled) {
  TensorType p = c.in[0]; // a copy: c.in grows below
  if (p.dtype != DType::F32) {
    c.in.push_back({DType::F32, p.shape});
    c.out.push_back({DType::F32, p.shape});
    c.inPlace[c.out.size() - 1] = c.in.size() - 1;
  }
  if (scaled) {
    c.in.push_back({DType::F32, {3}});
    c.in.push_back({DType::F32, {}});
    c.exact = {c.in.size() - 2, c.in.size() - 1};
  }
}

/// Each group launched together gives the bits of its updates launched
/// one by one (and they did update).
void expectGroupsAreEach(Backend &gpu,
                         const std::vector<std::vector<Case>> &groups) {
  for (const std::vector<Case> &group : groups) {
    std::string each = runUpdates(gpu, group, Launch::OneByOne);
    EXPECT_EQ(runUpdates(gpu, group, Launch::Grouped), each);
    EXPECT_NE(runUpdates(gpu, group, Launch::None), each);
  }
}

/// A run of AdamW updates launched together (the executor's groups; on a
/// GPU one multi-tensor launch per dtype, scaler and hyperparameters,
/// chunks of 65536 elements) gives the bits of launching them one by one:
/// f32, and 16-bit with masters, of 1 to 70000 elements, two learning
/// rates; then f16 with a shared loss scaler.
TEST_P(CudaConformance, AdamWGroupIsEachAdamW) {
  auto adamw = [](DType d, int64_t n, double lr, bool scaled) {
    TensorType p{d, {n}}, f32{DType::F32, {n}};
    Case c{"adamw", {p, p, f32, f32}, {p, f32, f32}};
    c.inPlace = {{0, 0}, {1, 2}, {2, 3}};
    c.positive = {3};
    for (auto [k, v] : {std::pair{"lr", lr},
                        {"beta1", 0.9},
                        {"beta2", 0.999},
                        {"eps", 1e-8},
                        {"weight_decay", 0.01}})
      c.attrs.set(k, v);
    c.step = 3;
    withMasterAndScaler(c, scaled);
    return c;
  };
  std::vector<std::vector<Case>> groups = {
      {adamw(DType::F32, 1000, 1e-2, false), adamw(DType::F32, 1, 1e-2, false),
       adamw(DType::BF16, 70000, 1e-2, false),
       adamw(DType::BF16, 4096, 1e-2, false),
       adamw(DType::BF16, 65536, 3e-3, false)},
      {adamw(DType::F16, 1000, 1e-2, true),
       adamw(DType::F16, 70000, 1e-2, true)}};
  expectGroupsAreEach(*gpu, groups);
}

/// A run of SGD updates launched together, as AdamWGroupIsEachAdamW: with
/// and without momentum (nesterov too), 16-bit with masters, f16 with a
/// shared loss scaler, at a first step and a later one.
TEST_P(CudaConformance, SgdGroupIsEachSgd) {
  auto sgd = [](DType d, int64_t n, double momentum, bool nesterov, bool scaled,
                int64_t step) {
    TensorType p{d, {n}}, f32{DType::F32, {n}};
    Case c{"sgd", {p, p}, {p}};
    c.inPlace = {{0, 0}};
    if (momentum != 0) {
      c.in.push_back(f32);
      c.out.push_back(f32);
      c.inPlace[1] = 2;
    }
    for (auto [k, v] : {std::pair{"lr", 1e-1},
                        {"momentum", momentum},
                        {"weight_decay", 1e-4}})
      c.attrs.set(k, v);
    c.attrs.set("nesterov", nesterov);
    c.step = step;
    withMasterAndScaler(c, scaled);
    return c;
  };
  std::vector<std::vector<Case>> groups = {
      {sgd(DType::F32, 1000, 0.9, false, false, 3),
       sgd(DType::F32, 1, 0, false, false, 3),
       sgd(DType::BF16, 70000, 0.9, true, false, 3),
       sgd(DType::BF16, 65536, 0.9, false, false, 3)},
      {sgd(DType::F32, 4096, 0.9, false, false, 0),
       sgd(DType::F32, 70000, 0.9, false, false, 0)},
      {sgd(DType::F16, 1000, 0.9, false, true, 3),
       sgd(DType::F16, 70000, 0.9, false, true, 3)}};
  expectGroupsAreEach(*gpu, groups);
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
    // ZeRO's gathered parameter written back over its buffer (in place).
    Case assign{"assign", {{d, {7, 33}}, {d, {7, 33}}}, {{d, {7, 33}}}};
    assign.inPlace = {{0, 0}};
    for (const Case *c :
         {&transpose, &matrix, &expand, &slice, &concat, &split, &assign})
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

/// weft-mixed-precision's narrowed softmax (16-bit scores and
/// probabilities) gives the bits of the cast chain it replaces: the scores
/// widened to f32, the f32 kernel, the probabilities rounded to nearest
/// even; and its gradient, from the rounded probabilities and a 16-bit dy,
/// the f32 gradient's bits rounded. Exactly, on the backend under test,
/// along the last axis (attention's) and a strided one.
TEST_P(CudaConformance, MixedSoftmaxIsTheCastChain) {
  for (DType d : {DType::BF16, DType::F16})
    for (int64_t axis : {2, 1}) {
      std::string what =
          std::string(dtypeName(d)) + " axis " + std::to_string(axis);
      TensorType x{d, {3, 17, 40}}, wide{DType::F32, {3, 17, 40}};
      auto widened = [&](const std::string &bytes) {
        return castOn(*gpu, x, bytes, DType::F32);
      };
      auto rounded = [&](const std::string &bytes) {
        return castOn(*gpu, wide, bytes, d);
      };
      Case mixed{"softmax", {x}, {x}};
      mixed.attrs.set("axis", axis);
      std::vector<std::string> in = inputs(mixed, 5);
      std::string y = runOn(*gpu, mixed, in)[0];
      Case f32{"softmax", {wide}, {wide}};
      f32.attrs = mixed.attrs;
      EXPECT_EQ(y, rounded(runOn(*gpu, f32, {widened(in[0])})[0])) << what;
      Case grad{"softmax_grad", {x, x}, {x}};
      grad.attrs.set("axis", axis);
      std::string dy = inputs(mixed, 6)[0];
      Case gradF32{"softmax_grad", {wide, wide}, {wide}};
      gradF32.attrs = grad.attrs;
      EXPECT_EQ(runOn(*gpu, grad, {y, dy})[0],
                rounded(runOn(*gpu, gradF32, {widened(y), widened(dy)})[0]))
          << what << " dx";
    }
}

// The table's coverage is the real backend's: the emulator's lacks the
// libraries' kernels by design.
#ifndef WEFT_CUDA_EMULATOR
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

#endif

/// After a whole run (no --gtest_filter; ctest's WeftCudaConformanceTests-
/// whole and WeftCudaEmulatorTests-whole, and scripts/gpu-check.sh on a
/// GPU), every kernel of the CUDA table has been run by some case.
class CoverageCheck : public ::testing::Environment {
  void TearDown() override {
    if (GTEST_FLAG_GET(filter) != "*")
      return;
    std::string missing;
    for (const ops::OpRecord &r : ops::opRecords())
      if (cuda::kernelTable().find(r.op) &&
          !kernelsRun().count(std::string(r.mnemonic)))
        missing += " " + std::string(r.mnemonic);
    EXPECT_EQ(missing, "") << "CUDA kernels without a conformance case";
  }
};
[[maybe_unused]] ::testing::Environment *const kCoverage =
    ::testing::AddGlobalTestEnvironment(new CoverageCheck);

#ifndef WEFT_CUDA_EMULATOR
/// Every CPU kernel has a CUDA one (cuDNN's only when the build found it),
/// so any plan the CPU runs loads on the GPU.
TEST(CudaKernelTable, HasEveryCpuKernel) {
  std::vector<std::string> lacking;
#ifndef WEFT_HAVE_CUDNN_FRONTEND // built without cuDNN's frontend
  lacking = {"attention", "attention_grad"};
#endif
#ifndef WEFT_HAVE_CUDNN // built without cuDNN: its kernels
  for (const char *name : {"batch_norm", "batch_norm_grad", "conv",
                           "conv_transpose", "conv_weight_grad"})
    lacking.push_back(name);
#endif
  EXPECT_EQ(cpuKernelsCudaLacks(), lacking);
}
#endif

#ifdef WEFT_CUDA_EMULATOR
// WeftCudaEmulatorTests: the CPU's half runs in WeftCudaConformanceTests.
INSTANTIATE_TEST_SUITE_P(Backends, CudaConformance,
                         ::testing::Values("emulator"),
                         [](const auto &info) { return info.param; });
#else
INSTANTIATE_TEST_SUITE_P(Backends, CudaConformance,
                         ::testing::Values("cpu", "cuda"),
                         [](const auto &info) { return info.param; });
#endif

} // namespace
