//===- CudaNetworkConformanceTest.cpp - norms, losses, convolutions -------===//
//
// The CUDA kernels of layer and batch norm, reductions, gathers, the
// vocabulary-parallel kernels, convolutions, pooling, resize, pad and fused
// attention against the CPU's (the harness: CudaConformance.h; the suite is
// instantiated in CudaConformanceTest.cpp; the losses'
// CudaLossConformanceTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaConformance.h"

using namespace weft::rt;
using namespace weft::rt::conformance;

namespace {

/// Over the last dim, and over the last two (one row of 5 x 48); scale and
/// bias of x's dtype, and f32 beside 16-bit x (mixed precision's).
TEST_P(CudaConformance, LayerNorm) {
  TensorType stats6{DType::F32, {6, 1, 1}}, stats30{DType::F32, {6, 5, 1}};
  for (DType d : floats())
    for (DType affine : {d, DType::F32})
      for (int64_t axis : {2, 1}) {
        if (affine != d && d == DType::F32)
          continue;
        std::vector<int64_t> normalized =
            axis == 2 ? std::vector<int64_t>{48} : std::vector<int64_t>{5, 48};
        TensorType x{d, {6, 5, 48}}, scale{affine, normalized};
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
        // With the residual gradient added in (accumulate).
        Case accumulated = backward;
        accumulated.in.push_back(x);
        expectConforms(accumulated, *gpu);
      }
  // 600 rows of 80: the GPU sums the scale and bias gradients in chunks
  // of 256 rows, combined after (a model's rows are thousands), and a
  // row's lanes take 2 or 3 elements each.
  for (DType d : floats()) {
    TensorType x{d, {600, 80}}, scale{DType::F32, {80}},
        stats{DType::F32, {600, 1}};
    Case rows{
        "layer_norm_grad", {x, scale, stats, stats, x}, {x, scale, scale}};
    rows.attrs.set("axis", int64_t(1));
    rows.positive = {3};
    expectConforms(rows, *gpu);
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

/// weft-mixed-precision's narrowed LayerNorm (16-bit x and y; scale and
/// bias f32, or the 16-bit parameters themselves) gives the bits of the
/// cast chain it replaces: x (and a 16-bit scale and bias) widened to
/// f32, the f32 kernel, y (and their gradients) rounded to nearest even.
/// Exactly, on the backend under test.
TEST_P(CudaConformance, MixedLayerNormIsTheCastChain) {
  // `bytes` of a 16-bit `t` cast to f32, and back.
  auto cast = [&](TensorType t, const std::string &bytes, DType to) {
    return castOn(*gpu, t, bytes, to);
  };
  for (DType d : {DType::BF16, DType::F16})
    for (bool narrowAffine : {false, true}) {
      std::string what = std::string(dtypeName(d)) +
                         (narrowAffine ? ", 16-bit affine" : ", f32 affine");
      TensorType x{d, {6, 5, 48}}, wide{DType::F32, {6, 5, 48}},
          scale{narrowAffine ? d : DType::F32, {48}},
          wideScale{DType::F32, {48}}, stats{DType::F32, {6, 5, 1}};
      auto up = [&](TensorType t, const std::string &bytes) {
        return t.dtype == DType::F32 ? bytes : cast(t, bytes, DType::F32);
      };
      auto down = [&](TensorType t, const std::string &bytes) {
        return t.dtype == DType::F32 ? bytes
                                     : cast({DType::F32, t.shape}, bytes, d);
      };
      Case mixed{"layer_norm", {x, scale, scale}, {x, stats, stats}};
      mixed.attrs.set("axis", int64_t(2));
      mixed.attrs.set("epsilon", 1e-5);
      std::vector<std::string> in = inputs(mixed, 3);
      std::vector<std::string> narrow = runOn(*gpu, mixed, in);
      // The chain: cast up, layer_norm in f32, cast down.
      Case f32 = mixed;
      f32.in = {wide, wideScale, wideScale};
      f32.out[0] = wide;
      std::string x32 = up(x, in[0]), s32 = up(scale, in[1]),
                  b32 = up(scale, in[2]);
      std::vector<std::string> chain = runOn(*gpu, f32, {x32, s32, b32});
      EXPECT_EQ(narrow[0], down(x, chain[0])) << what;
      EXPECT_EQ(narrow[1], chain[1]) << what << " mean";
      EXPECT_EQ(narrow[2], chain[2]) << what << " inv_std_dev";
      // The backward: 16-bit x and dy in, dx out; the chain widens dy too.
      Case grad{
          "layer_norm_grad", {x, scale, stats, stats, x}, {x, scale, scale}};
      grad.attrs.set("axis", int64_t(2));
      std::vector<std::string> gradIn = {in[0], in[1], narrow[1], narrow[2],
                                         inputs(mixed, 4)[0]};
      std::vector<std::string> narrowGrad = runOn(*gpu, grad, gradIn);
      Case gradF32 = grad;
      gradF32.in = {wide, wideScale, stats, stats, wide};
      gradF32.out = {wide, wideScale, wideScale};
      std::vector<std::string> chainGrad = runOn(
          *gpu, gradF32, {x32, s32, narrow[1], narrow[2], up(x, gradIn[4])});
      EXPECT_EQ(narrowGrad[0], down(x, chainGrad[0])) << what << " dx";
      EXPECT_EQ(narrowGrad[1], down(scale, chainGrad[1])) << what << " dscale";
      EXPECT_EQ(narrowGrad[2], down(scale, chainGrad[2])) << what << " dbias";
    }
}

/// layer_norm_grad with accumulate (weft-fold-layer-norm-grad-add) gives
/// the input gradient plus the accumulated one, rounded once: within one
/// rounding of the input gradient and an add, the two kernels it
/// replaces; the scale and bias gradients exactly theirs. On the backend
/// under test.
TEST_P(CudaConformance, LayerNormGradAccumulates) {
  for (DType d : floats()) {
    TensorType x{d, {6, 5, 48}}, scale{d, {48}}, stats{DType::F32, {6, 5, 1}};
    Case grad{
        "layer_norm_grad", {x, scale, stats, stats, x}, {x, scale, scale}};
    grad.attrs.set("axis", int64_t(2));
    grad.positive = {3};
    Case accumulated = grad;
    accumulated.in.push_back(x);
    std::vector<std::string> in = inputs(accumulated, 11);
    std::vector<std::string> fused = runOn(*gpu, accumulated, in);
    std::vector<std::string> plain =
        runOn(*gpu, grad, std::vector<std::string>(in.begin(), in.end() - 1));
    Case add{"add", {x, x}, {x}};
    std::string sum = runOn(*gpu, add, {plain[0], in[5]})[0];
    expectMatches(x, fused[0], sum,
                  std::string("accumulated dx, ") + dtypeName(d));
    EXPECT_EQ(fused[1], plain[1]) << dtypeName(d) << " dscale";
    EXPECT_EQ(fused[2], plain[2]) << dtypeName(d) << " dbias";
  }
}

/// add_layer_norm (weft-fold-residual-layer-norm) gives the bits of the
/// add and the layer_norm it replaces, on the backend under test: the sum
/// is the add's output, and the row it normalises is that sum as stored
/// (rounded). Scale and bias of x's dtype and f32 beside 16-bit x; rows
/// of 48 and of 5 x 37 (not a multiple of a warp).
TEST_P(CudaConformance, AddLayerNormIsTheAddThenLayerNorm) {
  for (DType d : floats())
    for (DType affine : {d, DType::F32})
      for (auto [shape, axis] :
           {std::pair<std::vector<int64_t>, int64_t>{{6, 5, 48}, 2},
            {{6, 5, 37}, 1}}) {
        if (affine != d && d == DType::F32)
          continue;
        TensorType x{d, shape};
        TensorType scale{
            affine, std::vector<int64_t>(shape.begin() + axis, shape.end())};
        std::vector<int64_t> stat(shape.begin(), shape.begin() + axis);
        stat.resize(shape.size(), 1);
        TensorType stats{DType::F32, stat};
        Case fused{
            "add_layer_norm", {x, x, scale, scale}, {x, stats, stats, x}};
        fused.attrs.set("axis", axis);
        fused.attrs.set("epsilon", 1e-5);
        expectConforms(fused, *gpu);
        std::vector<std::string> in = inputs(fused, 13);
        std::vector<std::string> got = runOn(*gpu, fused, in);
        std::string sum =
            runOn(*gpu, Case{"add", {x, x}, {x}}, {in[0], in[1]})[0];
        Case norm{"layer_norm", {x, scale, scale}, {x, stats, stats}};
        norm.attrs = fused.attrs;
        std::vector<std::string> want = runOn(*gpu, norm, {sum, in[2], in[3]});
        std::string what = std::string(dtypeName(d)) + ", " +
                           dtypeName(affine) + " affine, axis " +
                           std::to_string(axis);
        EXPECT_EQ(got[3], sum) << what << " sum";
        EXPECT_EQ(got[0], want[0]) << what << " y";
        EXPECT_EQ(got[1], want[1]) << what << " mean";
        EXPECT_EQ(got[2], want[2]) << what << " inv_std_dev";
      }
}

/// Calls fn(transposed, dy, x, dw, db, what) for each float dtype, both
/// weight layouts and shapes of a Linear layer's backward (M and N not
/// multiples of 8 too): dY [M, N], X [M, K], dW [N, K] (transposed:
/// [K, N]), db [N].
template <typename Fn> void forEachLinearBackward(Fn fn) {
  for (DType d : floats())
    for (bool transposed : {false, true})
      for (auto [m, n, k] :
           {std::tuple<int64_t, int64_t, int64_t>{96, 64, 32}, {37, 19, 11}}) {
        TensorType dy{d, {m, n}}, x{d, {m, k}}, db{d, {n}};
        TensorType dw{d, transposed ? std::vector<int64_t>{k, n}
                                    : std::vector<int64_t>{n, k}};
        std::string what = std::string(dtypeName(d)) + " " + std::to_string(m) +
                           "x" + std::to_string(n) +
                           (transposed ? " transposed" : "");
        fn(transposed, dy, x, dw, db, what);
      }
}

/// wgrad_bias (weft-fold-bias-grad; on a GPU cuBLASLt's BGRADB epilogue,
/// BGRADA transposed) gives the weight gradient of gemm(dY, X) {transA}
/// (transposed: gemm(X, dY)) and the bias gradient of reduce_sum(dY)
/// {axes = [0]}: within the dtype's tolerance, exactly on the CPU (the
/// two kernels). Shapes of a Linear layer's backward, with M and N not
/// multiples of 8 too.
TEST_P(CudaConformance, WgradBiasIsTheGemmAndSums) {
  forEachLinearBackward([&](bool transposed, const TensorType &dy,
                            const TensorType &x, const TensorType &dw,
                            const TensorType &db, const std::string &what) {
    Case fused{"wgrad_bias", {dy, x}, {dw, db}};
    if (transposed)
      fused.attrs.set("transposed", true);
    expectConforms(fused, *gpu);
    std::vector<std::string> in = inputs(fused, 12);
    std::vector<std::string> got = runOn(*gpu, fused, in);
    Case weight{"gemm", {dy, x}, {dw}};
    if (transposed)
      weight.in = {x, dy};
    weight.attrs.set("alpha", 1.0);
    weight.attrs.set("beta", 0.0);
    weight.attrs.set("transA", true);
    weight.attrs.set("transB", false);
    Case bias{"reduce_sum", {dy}, {db}};
    bias.attrs.set("axes", std::vector<int64_t>{0});
    bias.attrs.set("keepdims", false);
    std::string wantW =
        runOn(*gpu, weight,
              transposed ? std::vector<std::string>{in[1], in[0]} : in)[0];
    std::string wantB = runOn(*gpu, bias, {in[0]})[0];
    expectMatches(dw, got[0], wantW, "wgrad_bias weight, " + what);
    expectMatches(db, got[1], wantB, "wgrad_bias bias, " + what);
    if (GetParam() == "cpu") {
      EXPECT_EQ(got[0], wantW) << what;
      EXPECT_EQ(got[1], wantB) << what;
    }
  });
}

/// wgrad_bias accumulating into the sums (weft-fold-grad-accumulation; on
/// a GPU a cuBLASLt GEMM with beta 1 over its C, rounded once, and the
/// bias's epilogue sums added after) gives each sum plus wgrad_bias's
/// gradient, written over the sums: the adds it replaces, within the
/// dtype's tolerance, exactly on the CPU (its parts are those kernels).
TEST_P(CudaConformance, WgradBiasAccumulatesIntoTheSums) {
  forEachLinearBackward([&](bool transposed, const TensorType &dy,
                            const TensorType &x, const TensorType &dw,
                            const TensorType &db, const std::string &what) {
    Case fused{"wgrad_bias", {dy, x, dw, db}, {dw, db}};
    fused.inPlace = {{0, 2}, {1, 3}};
    Case plain{"wgrad_bias", {dy, x}, {dw, db}};
    if (transposed) {
      fused.attrs.set("transposed", true);
      plain.attrs.set("transposed", true);
    }
    expectConforms(fused, *gpu);
    std::vector<std::string> in = inputs(fused, 13);
    std::vector<std::string> got = runOn(*gpu, fused, in);
    std::vector<std::string> parts = runOn(*gpu, plain, {in[0], in[1]});
    Case addW{"add", {dw, dw}, {dw}}, addB{"add", {db, db}, {db}};
    std::string wantW = runOn(*gpu, addW, {in[2], parts[0]})[0];
    std::string wantB = runOn(*gpu, addB, {in[3], parts[1]})[0];
    expectMatches(dw, got[0], wantW, "accumulated weight, " + what);
    expectMatches(db, got[1], wantB, "accumulated bias, " + what);
    if (GetParam() == "cpu") {
      EXPECT_EQ(got[0], wantW) << what;
      EXPECT_EQ(got[1], wantB) << what;
    }
  });
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

/// `fused`, a scatter-add accumulating into its input 2 (its output's
/// bytes), against the plain scatter-add of inputs 0 and 1, then `add`:
/// equal to the bit, on both backends, and within tolerance of the CPU.
void expectAccumulatesAsTheAdd(Case fused, Backend &gpu,
                               const std::string &what) {
  fused.inPlace = {{0, 2}};
  expectConforms(fused, gpu);
  Case plain{fused.kernel, {fused.in[0], fused.in[1]}, fused.out};
  plain.attrs = fused.attrs;
  plain.below = fused.below;
  std::vector<std::string> in = inputs(fused, 13);
  std::string got = runOn(gpu, fused, in)[0];
  std::string table = runOn(gpu, plain, {in[0], in[1]})[0];
  Case add{"add", {fused.out[0], fused.out[0]}, fused.out};
  EXPECT_EQ(got, runOn(gpu, add, {in[2], table})[0]) << what;
}

/// gather_grad accumulating into another gradient of the table
/// (weft-fold-gather-grad-add: a tied head's) is that gradient plus
/// gather_grad's, written over it: the add it replaces, to the bit on
/// both backends (each row's sum is rounded to the dtype before it is
/// added, as the add saw it), the rows no index names (10 to 49) left as
/// they were. So is a vocabulary shard's, holding classes [20, 30) of 40
/// (ids of other shards add nothing).
TEST_P(CudaConformance, GatherGradAccumulatesIntoTheSum) {
  for (DType d : floats()) {
    std::string name = dtypeName(d);
    for (int64_t axis : {0, 1}) {
      TensorType data{d, axis == 0 ? std::vector<int64_t>{50, 16}
                                   : std::vector<int64_t>{3, 50, 4}};
      TensorType gathered{d, axis == 0 ? std::vector<int64_t>{3, 7, 16}
                                       : std::vector<int64_t>{3, 3, 7, 4}};
      Case fused{"gather_grad", {gathered, {DType::I64, {3, 7}}, data}, {data}};
      fused.attrs.set("axis", axis);
      fused.attrs.set("shape", data.shape);
      fused.below = {{1, 10}};
      expectAccumulatesAsTheAdd(fused, *gpu,
                                name + " axis " + std::to_string(axis));
    }
    TensorType table{d, {10, 8}};
    Case shard{"vocab_parallel_gather_grad",
               {{d, {3, 5, 8}}, {DType::I64, {3, 5}}, table},
               {table}};
    shard.attrs.set("start", int64_t(20));
    shard.attrs.set("rows", int64_t(10));
    shard.below = {{1, 40}};
    expectAccumulatesAsTheAdd(shard, *gpu, name + " vocabulary shard");
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
  WEFT_NEEDS_KERNELS("conv", "conv_transpose", "conv_weight_grad");
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
  WEFT_NEEDS_KERNELS("batch_norm", "batch_norm_grad");
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
/// Fused attention (cuDNN's flash attention on the GPU: bf16 and f16 only),
/// causal and not, Sk != Sq and Dv != D where the mask allows, on [B, H,
/// S, D] operands, on [B, S, H, D] ones (layout "bshd": strided rows,
/// weft-fold-attention-transpose's) and on packed [B, S, 3, H, D] ones
/// (layout "bs3hd", weft-fold-attention-split's: Sk = Sq, Dv = D). The
/// gradient's stats are drawn, not the forward's: both backends compute P
/// = exp(scale q k^T - stats) from whatever the buffer holds; the small
/// scale keeps those exponentials in range.
TEST_P(CudaConformance, Attention) {
  WEFT_NEEDS_KERNELS("attention", "attention_grad");
  for (DType d : {DType::BF16, DType::F16})
    for (bool causal : {true, false})
      for (std::string layout : {"", "bshd", "bs3hd"}) {
        bool packed = layout == "bs3hd";
        int64_t sk = causal || packed ? 40 : 24, dv = causal || packed ? 16 : 8;
        // [B, H, S, D], [B, S, H, D] or [B, S, 3, H, D] (the output and
        // its gradient [B, S, H, D]).
        auto operand = [&](int64_t s, int64_t width, bool out = false) {
          if (layout.empty())
            return TensorType{d, {2, 3, s, width}};
          if (packed && !out)
            return TensorType{d, {2, s, 3, 3, width}};
          return TensorType{d, {2, s, 3, width}};
        };
        TensorType q = operand(40, 16), k = operand(sk, 16),
                   v = operand(sk, dv), o = operand(40, dv, true),
                   stats{DType::F32, {2, 3, 40}};
        Case forward{"attention", {q, k, v}, {o, stats}};
        Case backward{"attention_grad", {q, k, v, o, stats, o}, {q, k, v}};
        if (packed)
          backward.out = {q};
        for (Case *c : {&forward, &backward}) {
          c->attrs.set("scale", 0.05);
          c->attrs.set("causal", causal);
          if (!layout.empty())
            c->attrs.set("layout", layout);
          expectConforms(*c, *gpu);
        }
      }
}

/// Part `part` of a packed [B, S, 3, H D] buffer as [B, S, H D], and the
/// parts put back.
std::string partOf(const std::string &packed, int64_t rows, int64_t part) {
  size_t width = packed.size() / size_t(rows) / 3;
  std::string out;
  for (int64_t r = 0; r < rows; ++r)
    out.append(packed, (size_t(r) * 3 + size_t(part)) * width, width);
  return out;
}

/// layout "bs3hd" reads q, k and v from their parts of packed buffers and
/// writes dq, dk and dv into the parts of one: the same attention as
/// "bshd" on those parts copied out, forward and backward, on the backend
/// under test.
TEST_P(CudaConformance, PackedAttentionIsTheSplitOne) {
  WEFT_NEEDS_KERNELS("attention", "attention_grad");
  for (DType d : {DType::BF16, DType::F16}) {
    TensorType packed{d, {2, 40, 3, 3, 16}}, heads{d, {2, 40, 3, 16}},
        stats{DType::F32, {2, 3, 40}};
    auto attention = [&](const char *kernel, std::vector<TensorType> in,
                         std::vector<TensorType> out, const char *layout) {
      Case c{kernel, std::move(in), std::move(out)};
      c.attrs.set("scale", 0.05);
      c.attrs.set("causal", true);
      c.attrs.set("layout", std::string(layout));
      return c;
    };
    Case forward = attention("attention", {packed, packed, packed},
                             {heads, stats}, "bs3hd");
    Case split =
        attention("attention", {heads, heads, heads}, {heads, stats}, "bshd");
    std::vector<std::string> in = inputs(forward, 5), parts;
    for (int64_t part : {0, 1, 2})
      parts.push_back(partOf(in[size_t(part)], 2 * 40, part));
    std::vector<std::string> got = runOn(*gpu, forward, in),
                             want = runOn(*gpu, split, parts);
    expectMatches(heads, got[0], want[0], "bs3hd output");
    expectMatches(stats, got[1], want[1], "bs3hd stats");
    // The backward from the forward's output and stats, a random dO.
    Case backward = attention("attention_grad",
                              {packed, packed, packed, heads, stats, heads},
                              {packed}, "bs3hd");
    Case splitBackward =
        attention("attention_grad", {heads, heads, heads, heads, stats, heads},
                  {heads, heads, heads}, "bshd");
    std::string dO = inputs(split, 6)[0];
    std::vector<std::string> gotGrad =
        runOn(*gpu, backward, {in[0], in[1], in[2], got[0], got[1], dO});
    std::vector<std::string> wantGrad =
        runOn(*gpu, splitBackward,
              {parts[0], parts[1], parts[2], want[0], want[1], dO});
    for (int64_t part : {0, 1, 2})
      expectMatches(heads, partOf(gotGrad[0], 2 * 40, part),
                    wantGrad[size_t(part)],
                    "bs3hd gradient part " + std::to_string(part));
  }
}

} // namespace
