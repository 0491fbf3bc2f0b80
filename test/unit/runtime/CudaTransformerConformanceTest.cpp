//===- CudaTransformerConformanceTest.cpp - the Llama block's kernels -----===//
//
// The CUDA kernels of the Llama block's fused ops (WeftTransformerOps.td)
// and of grouped-query fused attention against the CPU's (the harness:
// CudaConformance.h; the suite is instantiated in CudaConformanceTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaConformance.h"

using namespace weft::rt;
using namespace weft::rt::conformance;

namespace {

/// Grouped-query attention: 4 query heads over 2 kv heads and over 1
/// (multi-query), on [B, H, S, D] and [B, S, H, D] operands, forward and
/// backward (cuDNN reads k and v with their own head count).
TEST_P(CudaConformance, GroupedQueryAttention) {
  WEFT_NEEDS_KERNELS("attention", "attention_grad");
  for (DType d : {DType::BF16, DType::F16})
    for (int64_t kvHeads : {2, 1})
      for (std::string layout : {"", "bshd"}) {
        auto operand = [&](int64_t heads) {
          return layout.empty() ? TensorType{d, {2, heads, 40, 16}}
                                : TensorType{d, {2, 40, heads, 16}};
        };
        TensorType q = operand(4), kv = operand(kvHeads),
                   stats{DType::F32, {2, 4, 40}};
        Case forward{"attention", {q, kv, kv}, {q, stats}};
        Case backward{"attention_grad", {q, kv, kv, q, stats, q}, {q, kv, kv}};
        for (Case *c : {&forward, &backward}) {
          c->attrs.set("scale", 0.05);
          c->attrs.set("causal", true);
          if (!layout.empty())
            c->attrs.set("layout", layout);
          expectConforms(*c, *gpu);
        }
      }
}

/// Attention with a bias (a padding mask per batch row, and one per query
/// row of each batch row): cuDNN's SDPA bias, forward and backward. Needs
/// cuDNN's frontend on a GPU (the emulator runs no fused attention).
TEST_P(CudaConformance, AttentionWithBias) {
  WEFT_NEEDS_KERNELS("attention", "attention_grad");
  for (DType d : {DType::BF16, DType::F16})
    for (std::vector<int64_t> bias : {std::vector<int64_t>{2, 1, 1, 40},
                                      std::vector<int64_t>{2, 1, 40, 40}}) {
      TensorType q{d, {2, 4, 40, 16}}, stats{DType::F32, {2, 4, 40}},
          b{d, bias};
      Case forward{"attention", {q, q, q, b}, {q, stats}};
      Case backward{"attention_grad", {q, q, q, q, stats, q, b}, {q, q, q}};
      for (Case *c : {&forward, &backward}) {
        c->attrs.set("scale", 0.05);
        expectConforms(*c, *gpu);
      }
    }
}

/// rms_norm over the last dim and the last two, forward and backward,
/// and 600 rows of 80 (the scale gradient's column sums in chunks of 256
/// rows), in every float dtype (weft-mixed-precision's narrowed RMSNorm
/// runs the 16-bit forms: MixedRmsNormIsTheCastChain).
TEST_P(CudaConformance, RmsNorm) {
  for (DType d : floats())
    for (int64_t axis : {2, 1}) {
      std::vector<int64_t> normalized =
          axis == 2 ? std::vector<int64_t>{48} : std::vector<int64_t>{5, 48};
      TensorType x{d, {6, 5, 48}}, scale{d, normalized},
          stats{DType::F32, axis == 2 ? std::vector<int64_t>{6, 5, 1}
                                      : std::vector<int64_t>{6, 1, 1}};
      Case forward{"rms_norm", {x, scale}, {x, stats}};
      forward.attrs.set("axis", axis);
      forward.attrs.set("epsilon", 1e-6);
      expectConforms(forward, *gpu);
      Case backward{"rms_norm_grad", {x, scale, stats, x}, {x, scale}};
      backward.attrs.set("axis", axis);
      backward.positive = {2}; // 1 / rms
      expectConforms(backward, *gpu);
    }
  for (DType d : floats()) {
    TensorType x{d, {600, 80}}, scale{d, {80}}, stats{DType::F32, {600, 1}};
    Case rows{"rms_norm_grad", {x, scale, stats, x}, {x, scale}};
    rows.attrs.set("axis", int64_t(1));
    rows.positive = {2};
    expectConforms(rows, *gpu);
  }
}

/// weft-mixed-precision's narrowed RMSNorm (16-bit x, scale and y; f32
/// inv_rms) gives the bits of the cast chain it replaces: x and the scale
/// widened to f32, the f32 kernel, y and the gradients rounded to nearest
/// even. Exactly, on the backend under test.
TEST_P(CudaConformance, MixedRmsNormIsTheCastChain) {
  auto cast = [&](TensorType t, const std::string &bytes, DType to) {
    return castOn(*gpu, t, bytes, to);
  };
  for (DType d : {DType::BF16, DType::F16}) {
    std::string what = dtypeName(d);
    TensorType x{d, {6, 5, 48}}, wide{DType::F32, {6, 5, 48}}, scale{d, {48}},
        wideScale{DType::F32, {48}}, stats{DType::F32, {6, 5, 1}};
    Case mixed{"rms_norm", {x, scale}, {x, stats}};
    mixed.attrs.set("axis", int64_t(2));
    mixed.attrs.set("epsilon", 1e-6);
    std::vector<std::string> in = inputs(mixed, 3);
    std::vector<std::string> narrow = runOn(*gpu, mixed, in);
    Case f32 = mixed;
    f32.in = {wide, wideScale};
    f32.out[0] = wide;
    std::string x32 = cast(x, in[0], DType::F32),
                s32 = cast(scale, in[1], DType::F32);
    std::vector<std::string> chain = runOn(*gpu, f32, {x32, s32});
    EXPECT_EQ(narrow[0], cast(wide, chain[0], d)) << what;
    EXPECT_EQ(narrow[1], chain[1]) << what << " inv_rms";
    Case grad{"rms_norm_grad", {x, scale, stats, x}, {x, scale}};
    grad.attrs.set("axis", int64_t(2));
    std::string dy = inputs(mixed, 4)[0];
    std::vector<std::string> narrowGrad =
        runOn(*gpu, grad, {in[0], in[1], narrow[1], dy});
    Case gradF32 = grad;
    gradF32.in = {wide, wideScale, stats, wide};
    gradF32.out = {wide, wideScale};
    std::vector<std::string> chainGrad =
        runOn(*gpu, gradF32, {x32, s32, narrow[1], cast(x, dy, DType::F32)});
    EXPECT_EQ(narrowGrad[0], cast(wide, chainGrad[0], d)) << what << " dx";
    EXPECT_EQ(narrowGrad[1], cast(wideScale, chainGrad[1], d))
        << what << " dscale";
  }
}

/// scale_mask_softmax and scale_mask_softmax_grad give the bits of the
/// div, where and softmax (softmax_grad, where and div) they replace, on
/// the backend under test: [2, 3, 17, 40] scores under a causal mask
/// [17, 40] and [1, 1, 17, 40], in f32 and the 16-bit types (the quotient
/// rounded to them before the mask, as the div's output was).
TEST_P(CudaConformance, ScaleMaskSoftmaxIsItsParts) {
  WEFT_NEEDS_KERNELS("scale_mask_softmax", "scale_mask_softmax_grad");
  const int64_t queries = 17, keys = 40;
  std::string causal(queries * keys, '\0');
  for (int64_t q = 0; q < queries; ++q)
    for (int64_t k = 0; k < keys; ++k)
      causal[q * keys + k] = k > q + keys - queries; // the future
  const double divisor = 9.8125; // bf16's sqrt(96), exact in every type
  for (DType d : {DType::F32, DType::BF16, DType::F16})
    for (std::vector<int64_t> maskShape :
         {std::vector<int64_t>{queries, keys},
          std::vector<int64_t>{1, 1, queries, keys}}) {
      std::string what = std::string(dtypeName(d)) + " mask rank " +
                         std::to_string(maskShape.size());
      TensorType x{d, {2, 3, queries, keys}}, mask{DType::Bool, maskShape},
          scalar{d, {}};
      auto literal = [&](float v) {
        std::string bytes(sizeof v, '\0');
        std::memcpy(bytes.data(), &v, sizeof v);
        return castOn(*gpu, {DType::F32, {}}, bytes, d);
      };
      auto run = [&](const char *kernel, std::vector<TensorType> in,
                     std::vector<std::string> bytes, KernelAttrs attrs = {}) {
        Case c{kernel, std::move(in), {x}};
        c.attrs = std::move(attrs);
        return runOn(*gpu, c, bytes)[0];
      };
      KernelAttrs lastAxis;
      lastAxis.set("axis", int64_t(3));
      Case fused{"scale_mask_softmax", {x, mask, scalar}, {x}};
      std::string scores = inputs(Case{"", {x}, {}}, 7)[0];
      fused.attrs.set("divisor", divisor);
      std::string y =
          runOn(*gpu, fused, {scores, causal, literal(-INFINITY)})[0];
      std::string quotient =
          run("div", {x, scalar}, {scores, literal(float(divisor))});
      std::string masked = run("where", {mask, scalar, x},
                               {causal, literal(-INFINITY), quotient});
      EXPECT_EQ(y, run("softmax", {x}, {masked}, lastAxis)) << what;

      Case grad{"scale_mask_softmax_grad", {x, x, mask}, {x}};
      grad.attrs.set("divisor", divisor);
      std::string dy = inputs(Case{"", {x}, {}}, 8)[0];
      std::string dx = runOn(*gpu, grad, {y, dy, causal})[0];
      std::string g = run("softmax_grad", {x, x}, {y, dy}, lastAxis);
      std::string w =
          run("where", {mask, scalar, x}, {causal, literal(0.0f), g});
      EXPECT_EQ(dx, run("div", {x, scalar}, {w, literal(float(divisor))}))
          << what << " grad";
    }
}

/// glu and glu_grad in each activation (SwiGLU, GeGLU erf and tanh).
TEST_P(CudaConformance, GatedLinearUnit) {
  for (DType d : floats())
    for (const char *activation : {"silu", "gelu", "gelu_tanh"}) {
      TensorType x{d, {6, 5, 48}};
      Case forward{"glu", {x, x}, {x}};
      forward.attrs.set("activation", std::string(activation));
      expectConforms(forward, *gpu);
      Case backward{"glu_grad", {x, x, x}, {x, x}};
      backward.attrs.set("activation", std::string(activation));
      expectConforms(backward, *gpu);
    }
}

/// rotary and rotary_grad, half-split and interleaved, the tables [S, D]
/// broadcast over batch and heads and a [B, 1, S, D] one.
TEST_P(CudaConformance, Rotary) {
  for (DType d : floats())
    for (bool interleaved : {false, true})
      for (std::vector<int64_t> table :
           {std::vector<int64_t>{40, 16}, std::vector<int64_t>{2, 1, 40, 16}}) {
        TensorType x{d, {2, 3, 40, 16}}, t{d, table};
        for (const char *kernel : {"rotary", "rotary_grad"}) {
          Case c{kernel, {x, t, t}, {x}};
          c.attrs.set("axis", int64_t(3));
          c.attrs.set("interleaved", interleaved);
          expectConforms(c, *gpu);
        }
      }
}

} // namespace
