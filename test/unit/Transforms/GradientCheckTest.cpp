//===- GradientCheckTest.cpp - every gradient rule against finite differences
//===----------------------------------------------------------------------===//
//
// For each case, a small function of `weft.param` arguments returning a
// scalar: weft-autodiff + plan emission + the CPU runtime give the analytic
// gradient; the forward plan, run at p +- h, gives the central difference
// (L(p+h) - L(p-h)) / 2h. Every case is float64: h = 1e-6, and the two must
// agree to 1e-6 of the largest gradient entry (a float32 case would use
// h = 1e-2 and 2e-2).
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/Target/Plan/EmitPlan.h"
#include "weft/Transforms/Passes.h"
#include "weft/runtime/Backend.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;

namespace {

struct Param {
  std::string name;
  bool f64;
  int64_t count;
};

/// Runs plans on the CPU backend with parameter values set from doubles.
struct Runner {
  Runner(const nlohmann::json &json,
         std::unique_ptr<weft::rt::Backend> &backend)
      : plan(weft::rt::parsePlan(
            json.dump(), "test",
            [&](const std::string &k) { return backend->hasKernel(k); })),
        executor(plan, 0, *backend) {}

  void set(const Param &p, const std::vector<double> &values) {
    std::string bytes(p.count * (p.f64 ? 8 : 4), '\0');
    for (int64_t i = 0; i < p.count; ++i) {
      if (p.f64) {
        std::memcpy(bytes.data() + 8 * i, &values[i], 8);
      } else {
        float f = static_cast<float>(values[i]);
        std::memcpy(bytes.data() + 4 * i, &f, 4);
      }
    }
    executor.setParameter(p.name, bytes);
  }
  std::vector<double> get(const std::string &output, bool f64) {
    std::string bytes = executor.output(output);
    std::vector<double> out(bytes.size() / (f64 ? 8 : 4));
    for (size_t i = 0; i < out.size(); ++i) {
      if (f64) {
        std::memcpy(&out[i], bytes.data() + 8 * i, 8);
      } else {
        float f;
        std::memcpy(&f, bytes.data() + 4 * i, 4);
        out[i] = f;
      }
    }
    return out;
  }

  weft::rt::Plan plan;
  weft::rt::Executor executor;
};

/// The runtime's kernel table counts the FLOPs the compiler's cost model
/// does (CostOpInterface), for every instruction of `plan`.
void checkCosts(ModuleOp module, const weft::rt::Plan &plan) {
  std::vector<std::pair<std::string, int64_t>> ops;
  module.walk([&](weft::CostOpInterface op) {
    std::string name = op->getName().stripDialect().str();
    if (weft::rt::findKernelSpec(name)) // not constants, reshapes, transfers
      ops.push_back({name, op.getFlops()});
  });
  std::vector<std::pair<std::string, int64_t>> instructions;
  for (const weft::rt::Instruction &inst : plan.ranks[0].instructions)
    if (inst.op == "compute")
      instructions.push_back({inst.kernel, inst.cost.flops});
  EXPECT_EQ(instructions, ops);
}

void checkGradients(const char *ir) {
  MLIRContext ctx;
  ctx.loadDialect<weft::WeftDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> forward = parseSourceString<ModuleOp>(ir, &ctx);
  ASSERT_TRUE(forward);
  OwningOpRef<ModuleOp> backward = forward->clone();
  PassManager pm(&ctx);
  pm.addNestedPass<func::FuncOp>(weft::createAutodiff());
  ASSERT_TRUE(succeeded(pm.run(*backward)));
  auto forwardPlan = weft::emitPlan(*forward, {"none.onnx", ""});
  auto backwardPlan = weft::emitPlan(*backward, {"none.onnx", ""});
  ASSERT_TRUE(succeeded(forwardPlan) && succeeded(backwardPlan));

  auto func = cast<func::FuncOp>(forward->getBody()->front());
  std::vector<Param> params;
  for (BlockArgument arg : func.getArguments()) {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), weft::kParamAttr);
    auto type = cast<RankedTensorType>(arg.getType());
    params.push_back(
        {name.str(), type.getElementType().isF64(), type.getNumElements()});
  }
  bool f64 =
      cast<RankedTensorType>(func.getResultTypes()[0]).getElementType().isF64();
  double h = f64 ? 1e-6 : 1e-2, tolerance = f64 ? 1e-6 : 2e-2;

  auto backend = weft::rt::createCpuBackend();
  Runner grad(*backwardPlan, backend), loss(*forwardPlan, backend);
  checkCosts(*forward, loss.plan);
  checkCosts(*backward, grad.plan);
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<std::vector<double>> values;
  for (const Param &p : params) {
    values.emplace_back(p.count);
    for (double &v : values.back())
      v = uniform(rng);
    grad.set(p, values.back());
    loss.set(p, values.back());
  }
  grad.executor.run(0, 0, nullptr);
  std::string lossName = (*forwardPlan)["outputs"][0]["name"];
  for (size_t k = 0; k < params.size(); ++k) {
    std::vector<double> analytic =
        grad.get(params[k].name + ".grad", params[k].f64);
    double scale = 1e-12;
    for (double g : analytic)
      scale = std::max(scale, std::abs(g));
    for (int64_t i = 0; i < params[k].count; ++i) {
      std::vector<double> shifted = values[k];
      double fd[2];
      for (int sign : {0, 1}) {
        shifted[i] = values[k][i] + (sign ? -h : h);
        loss.set(params[k], shifted);
        loss.executor.run(0, 0, nullptr);
        fd[sign] = loss.get(lossName, f64)[0];
      }
      double numeric = (fd[0] - fd[1]) / (2 * h);
      EXPECT_NEAR(analytic[i], numeric, tolerance * scale)
          << "d loss / d " << params[k].name << "[" << i << "]";
    }
    loss.set(params[k], values[k]);
  }
}

/// loss = sum(y * y) of a value %y of type `type`.
std::string squaredSum(const std::string &type, int rank) {
  std::string axes;
  for (int d = 0; d < rank; ++d)
    axes += (d ? ", " : "") + std::to_string(d);
  std::string elem = type.find("f64") != std::string::npos ? "f64" : "f32";
  return "  %sq = weft.mul %y, %y : (" + type + ", " + type + ") -> " + type +
         "\n  %l = weft.reduce_sum %sq {axes = array<i64: " + axes +
         ">, keepdims = false} : (" + type + ") -> tensor<" + elem +
         ">\n  return %l : tensor<" + elem + ">\n}\n";
}

} // namespace

TEST(GradientCheck, ElementwiseWithBroadcasting) {
  checkGradients((R"mlir(
func.func @main(%a: tensor<2x3xf64> {weft.param = "a"}, %b: tensor<3xf64> {weft.param = "b"}) -> tensor<f64> {
  %m = weft.mul %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %c = weft.constant dense<3.0> : tensor<f64>
  %bb = weft.add %b, %c : (tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
  %d = weft.div %a, %bb : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %s = weft.sub %m, %d : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %n = weft.neg %s : tensor<2x3xf64>
  %y = weft.add %n, %a : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
)mlir" + squaredSum("tensor<2x3xf64>", 2))
                     .c_str());
}

/// torch.maximum/minimum's derivative away from ties: the gradient goes to
/// the operand the result is (random values are never equal).
TEST(GradientCheck, MaxMinWithBroadcasting) {
  checkGradients((R"mlir(
func.func @main(%a: tensor<2x3xf64> {weft.param = "a"}, %b: tensor<3xf64> {weft.param = "b"}) -> tensor<f64> {
  %mx = weft.max %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %mn = weft.min %b, %a : (tensor<3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %c = weft.constant dense<3.0> : tensor<f64>
  %m3 = weft.mul %mx, %c : (tensor<2x3xf64>, tensor<f64>) -> tensor<2x3xf64>
  %y = weft.add %m3, %mn : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
)mlir" + squaredSum("tensor<2x3xf64>", 2))
                     .c_str());
}

TEST(GradientCheck, TranscendentalChain) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<6xf64> {weft.param = "x"}) -> tensor<f64> {
  %t = weft.tanh %x : tensor<6xf64>
  %s = weft.sigmoid %t : tensor<6xf64>
  %e = weft.erf %s : tensor<6xf64>
  %x2 = weft.exp %e : tensor<6xf64>
  %q = weft.sqrt %x2 : tensor<6xf64>
  %r = weft.reciprocal %q : tensor<6xf64>
  %lg = weft.log %q : tensor<6xf64>
  %three = weft.constant dense<3.0> : tensor<f64>
  %p = weft.pow %r, %three : (tensor<6xf64>, tensor<f64>) -> tensor<6xf64>
  %y = weft.add %p, %lg : (tensor<6xf64>, tensor<6xf64>) -> tensor<6xf64>
)mlir" + squaredSum("tensor<6xf64>", 1))
                     .c_str());
}

/// Rotary tables' sin and cos, and a mask built with compare and where
/// on the values (no derivative through the condition: the gradient flows
/// through where's branches only).
TEST(GradientCheck, SinCosAndACompareMask) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<6xf64> {weft.param = "x"}) -> tensor<f64> {
  %s = weft.sin %x : tensor<6xf64>
  %c = weft.cos %x : tensor<6xf64>
  %zero = weft.constant dense<0.0> : tensor<f64>
  %pos = weft.compare %x, %zero {predicate = "greater"} : (tensor<6xf64>, tensor<f64>) -> tensor<6xi1>
  %nan = weft.is_nan %x : (tensor<6xf64>) -> tensor<6xi1>
  %keep = weft.logical %pos, %nan {kind = "xor"} : (tensor<6xi1>, tensor<6xi1>) -> tensor<6xi1>
  %y = weft.where %keep, %s, %c : (tensor<6xi1>, tensor<6xf64>, tensor<6xf64>) -> tensor<6xf64>
)mlir" + squaredSum("tensor<6xf64>", 1))
                     .c_str());
}

/// CumSum's gradient: the cumulative sum of dy the other way, as
/// exclusive as the forward.
TEST(GradientCheck, CumSumEachWay) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<3x4xf64> {weft.param = "x"}) -> tensor<f64> {
  %a = weft.cumsum %x {axis = 1 : i64} : (tensor<3x4xf64>) -> tensor<3x4xf64>
  %b = weft.cumsum %a {axis = 0 : i64, reverse = true} : (tensor<3x4xf64>) -> tensor<3x4xf64>
  %c = weft.cumsum %b {axis = 1 : i64, exclusive = true} : (tensor<3x4xf64>) -> tensor<3x4xf64>
  %y = weft.mul %c, %x : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
)mlir" + squaredSum("tensor<3x4xf64>", 2))
                     .c_str());
}

/// GatherElements' gradient: indices repeating along the axis and
/// smaller than the data off it (GPT-NeoX gathers its rotary tables so).
TEST(GradientCheck, GatherElements) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<2x4x3xf64> {weft.param = "x"}) -> tensor<f64> {
  %i = weft.constant dense<[[[0, 3], [3, 1], [0, 0]]]> : tensor<1x3x2xi64>
  %y = weft.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x4x3xf64>, tensor<1x3x2xi64>) -> tensor<1x3x2xf64>
)mlir" + squaredSum("tensor<1x3x2xf64>", 3))
                     .c_str());
}

TEST(GradientCheck, Gelu) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<7xf64> {weft.param = "x"}) -> tensor<f64> {
  %y = weft.gelu %x : tensor<7xf64>
)mlir" + squaredSum("tensor<7xf64>", 1))
                     .c_str());
}

TEST(GradientCheck, GeluTanh) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<7xf64> {weft.param = "x"}) -> tensor<f64> {
  %y = weft.gelu_tanh %x : tensor<7xf64>
)mlir" + squaredSum("tensor<7xf64>", 1))
                     .c_str());
}

TEST(GradientCheck, BatchedMatMulAndGemm) {
  checkGradients((R"mlir(
func.func @main(%a: tensor<2x3x4xf64> {weft.param = "a"}, %w: tensor<4x5xf64> {weft.param = "w"},
             %g: tensor<6x5xf64> {weft.param = "g"}, %c: tensor<6xf64> {weft.param = "c"}) -> tensor<f64> {
  %m = weft.matmul %a, %w : (tensor<2x3x4xf64>, tensor<4x5xf64>) -> tensor<2x3x5xf64>
  %r = weft.reshape %m {shape = array<i64: 6, 5>} : (tensor<2x3x5xf64>) -> tensor<6x5xf64>
  %y = weft.gemm %r, %g, %c {alpha = 0.5 : f64, beta = 2.0 : f64, transB = true} : (tensor<6x5xf64>, tensor<6x5xf64>, tensor<6xf64>) -> tensor<6x6xf64>
)mlir" + squaredSum("tensor<6x6xf64>", 2))
                     .c_str());
}

// torch.nn.Linear's export, x Transpose(V) + b, on a batched x: the rule
// reads V through GEMM flags and folds the transposes (GradientsNN.cpp).
TEST(GradientCheck, LinearWithTransposedWeight) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<2x3x4xf64> {weft.param = "x"}, %v: tensor<5x4xf64> {weft.param = "v"},
             %c: tensor<5xf64> {weft.param = "c"}) -> tensor<f64> {
  %w = weft.transpose %v {perm = array<i64: 1, 0>} : (tensor<5x4xf64>) -> tensor<4x5xf64>
  %m = weft.matmul %x, %w : (tensor<2x3x4xf64>, tensor<4x5xf64>) -> tensor<2x3x5xf64>
  %y = weft.add %c, %m : (tensor<5xf64>, tensor<2x3x5xf64>) -> tensor<2x3x5xf64>
)mlir" + squaredSum("tensor<2x3x5xf64>", 3))
                     .c_str());
}

// weft.matmul's transA/transB (never imported: the rule's own products),
// with a broadcast batch summed back.
TEST(GradientCheck, MatMulReadingTransposedOperands) {
  checkGradients((R"mlir(
func.func @main(%a: tensor<2x4x3xf64> {weft.param = "a"}, %b: tensor<5x4xf64> {weft.param = "b"},
             %e: tensor<1x3x6xf64> {weft.param = "e"}, %f: tensor<2x7x5xf64> {weft.param = "f"}) -> tensor<f64> {
  %m = weft.matmul %a, %b {transA = true, transB = true} : (tensor<2x4x3xf64>, tensor<5x4xf64>) -> tensor<2x3x5xf64>
  %n = weft.matmul %e, %m {transA = true} : (tensor<1x3x6xf64>, tensor<2x3x5xf64>) -> tensor<2x6x5xf64>
  %y = weft.matmul %n, %f {transB = true} : (tensor<2x6x5xf64>, tensor<2x7x5xf64>) -> tensor<2x6x7xf64>
)mlir" + squaredSum("tensor<2x6x7xf64>", 3))
                     .c_str());
}

// Attention's scores q k^T with k^T a transpose of [B, S, H, D] keys: dq
// reads k^T transposed, dk is one product and one transpose keeping the
// last dim (GradientsNN.cpp); the values' product reads the probabilities.
TEST(GradientCheck, AttentionReadsItsTransposes) {
  checkGradients((R"mlir(
func.func @main(%q: tensor<1x2x3x4xf64> {weft.param = "q"}, %k: tensor<1x5x2x4xf64> {weft.param = "k"},
             %v: tensor<1x2x5x3xf64> {weft.param = "v"}) -> tensor<f64> {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x5x2x4xf64>) -> tensor<1x2x4x5xf64>
  %s = weft.matmul %q, %kt : (tensor<1x2x3x4xf64>, tensor<1x2x4x5xf64>) -> tensor<1x2x3x5xf64>
  %p = weft.softmax %s {axis = 3 : i64} : tensor<1x2x3x5xf64>
  %y = weft.matmul %p, %v : (tensor<1x2x3x5xf64>, tensor<1x2x5x3xf64>) -> tensor<1x2x3x3xf64>
)mlir" + squaredSum("tensor<1x2x3x3xf64>", 4))
                     .c_str());
}

// Fused grouped-query attention (4 query heads over 2 kv heads, causal,
// Dv != D): each kv head's dk and dv sum its group's shares, against
// central differences of the forward kernel.
TEST(GradientCheck, GroupedQueryAttention) {
  checkGradients((R"mlir(
func.func @main(%q: tensor<2x4x3x4xf64> {weft.param = "q"}, %k: tensor<2x2x3x4xf64> {weft.param = "k"},
             %v: tensor<2x2x3x2xf64> {weft.param = "v"}) -> tensor<f64> {
  %y, %stats = weft.attention %q, %k, %v {causal = true, scale = 0.5 : f64} : (tensor<2x4x3x4xf64>, tensor<2x2x3x4xf64>, tensor<2x2x3x2xf64>) -> (tensor<2x4x3x2xf64>, tensor<2x4x3xf64>)
)mlir" + squaredSum("tensor<2x4x3x2xf64>", 4))
                     .c_str());
}

// Fused attention with a bias (a padding mask per batch row, broadcast over
// heads and queries) under a causal mask: dq, dk and dv against central
// differences of the forward kernel, which adds the bias before the
// softmax. Batch 1 masks key 0 with -inf, so its query 0 (causal: key 0
// alone) attends to nothing: output 0, gradients 0, no NaN.
TEST(GradientCheck, AttentionWithBias) {
  checkGradients((R"mlir(
func.func @main(%q: tensor<2x2x3x4xf64> {weft.param = "q"}, %k: tensor<2x2x3x4xf64> {weft.param = "k"},
             %v: tensor<2x2x3x2xf64> {weft.param = "v"}) -> tensor<f64> {
  %b = weft.constant dense<[[[[0.0, 0.5, -1.0]]], [[[0xFFF0000000000000, 0.25, 0.0]]]]> : tensor<2x1x1x3xf64>
  %y, %stats = weft.attention %q, %k, %v bias %b {causal = true, scale = 0.5 : f64} : (tensor<2x2x3x4xf64>, tensor<2x2x3x4xf64>, tensor<2x2x3x2xf64>, tensor<2x1x1x3xf64>) -> (tensor<2x2x3x2xf64>, tensor<2x2x3xf64>)
)mlir" + squaredSum("tensor<2x2x3x2xf64>", 4))
                     .c_str());
}

// The gated linear unit in its three activations (SwiGLU, GeGLU erf and
// tanh), gate and up both parameters.
TEST(GradientCheck, GatedLinearUnits) {
  for (const char *activation : {"silu", "gelu", "gelu_tanh"})
    checkGradients(
        (std::string(R"mlir(
func.func @main(%g: tensor<2x5xf64> {weft.param = "g"}, %u: tensor<2x5xf64> {weft.param = "u"}) -> tensor<f64> {
  %y = weft.glu %g, %u {activation = ")mlir") +
         activation +
         R"mlir("} : (tensor<2x5xf64>, tensor<2x5xf64>) -> tensor<2x5xf64>
)mlir" + squaredSum("tensor<2x5xf64>", 2))
            .c_str());
}

// Rotary embeddings, half-split and interleaved, the tables constants
// broadcast over batch and heads (they get no gradient: weft-fuse-rotary
// fuses only such tables).
TEST(GradientCheck, Rotary) {
  for (const char *interleaved : {"false", "true"})
    checkGradients(
        (std::string(R"mlir(
func.func @main(%x: tensor<2x2x3x4xf64> {weft.param = "x"}) -> tensor<f64> {
  %c = weft.constant dense<[[0.9, 0.2, -0.4, 0.7], [0.1, -0.8, 0.5, 0.3], [-0.6, 0.4, 0.9, -0.2]]> : tensor<3x4xf64>
  %s = weft.constant dense<[[0.3, -0.5, 0.8, 0.1], [0.7, 0.2, -0.3, 0.9], [0.4, 0.6, -0.1, -0.7]]> : tensor<3x4xf64>
  %y = weft.rotary %x, %c, %s {axis = 3 : i64, interleaved = )mlir") +
         interleaved +
         R"mlir(} : (tensor<2x2x3x4xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<2x2x3x4xf64>
)mlir" + squaredSum("tensor<2x2x3x4xf64>", 4))
            .c_str());
}

// RMSNorm over the last dim and over the last two, its scale a parameter.
TEST(GradientCheck, RmsNorm) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<2x3x4xf64> {weft.param = "x"}, %s: tensor<4xf64> {weft.param = "s"},
             %t: tensor<3x4xf64> {weft.param = "t"}) -> tensor<f64> {
  %n, %r = weft.rms_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-6 : f64} : (tensor<2x3x4xf64>, tensor<4xf64>) -> (tensor<2x3x4xf64>, tensor<2x3x1xf64>)
  %y, %r2 = weft.rms_norm %n, %t {axis = 1 : i64, epsilon = 0.1 : f64} : (tensor<2x3x4xf64>, tensor<3x4xf64>) -> (tensor<2x3x4xf64>, tensor<2x1x1xf64>)
)mlir" + squaredSum("tensor<2x3x4xf64>", 3))
                     .c_str());
}

TEST(GradientCheck, SoftmaxLayerNormReductions) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<2x3x4xf64> {weft.param = "x"}, %s: tensor<4xf64> {weft.param = "s"}, %b: tensor<4xf64> {weft.param = "b"}) -> tensor<f64> {
  %n:3 = weft.layer_norm %x, %s, %b {axis = 2 : i64} : (tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> (tensor<2x3x4xf64>, tensor<2x3x1xf64>, tensor<2x3x1xf64>)
  %p = weft.softmax %n#0 {axis = 2 : i64} : tensor<2x3x4xf64>
  %lp = weft.log_softmax %p {axis = 1 : i64} : tensor<2x3x4xf64>
  %mx = weft.reduce_max %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf64>) -> tensor<2x1x4xf64>
  %mn = weft.reduce_mean %lp {axes = array<i64: 1>, keepdims = true} : (tensor<2x3x4xf64>) -> tensor<2x1x4xf64>
  %y = weft.add %mx, %mn : (tensor<2x1x4xf64>, tensor<2x1x4xf64>) -> tensor<2x1x4xf64>
)mlir" + squaredSum("tensor<2x1x4xf64>", 3))
                     .c_str());
}

TEST(GradientCheck, DataMovement) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<2x3xf64> {weft.param = "x"}, %e: tensor<5x2xf64> {weft.param = "e"}) -> tensor<f64> {
  %t = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf64>) -> tensor<3x2xf64>
  %ids = weft.constant dense<[[0, 4], [4, 2]]> : tensor<2x2xi64>
  %g = weft.gather %e, %ids {axis = 0 : i64} : (tensor<5x2xf64>, tensor<2x2xi64>) -> tensor<2x2x2xf64>
  %gr = weft.reshape %g {shape = array<i64: 4, 2>} : (tensor<2x2x2xf64>) -> tensor<4x2xf64>
  %c = weft.concat %t, %gr {axis = 0 : i64} : (tensor<3x2xf64>, tensor<4x2xf64>) -> tensor<7x2xf64>
  %s:2 = weft.split %c {axis = 0 : i64, sizes = array<i64: 5, 2>} : (tensor<7x2xf64>) -> (tensor<5x2xf64>, tensor<2x2xf64>)
  %sl = weft.slice %s#0 {starts = array<i64: 1, 0>, ends = array<i64: 4, 2>, steps = array<i64: 1, 1>} : (tensor<5x2xf64>) -> tensor<3x2xf64>
  %pd = weft.pad %sl {pads = array<i64: 1, 0, 0, 1>, value = 0.0 : f64} : (tensor<3x2xf64>) -> tensor<4x3xf64>
  %er = weft.reshape %s#1 {shape = array<i64: 4, 1>} : (tensor<2x2xf64>) -> tensor<4x1xf64>
  %ex = weft.expand %er {shape = array<i64: 4, 3>} : (tensor<4x1xf64>) -> tensor<4x3xf64>
  %cond = weft.constant dense<[[true, false, true], [false, true, true], [true, true, false], [false, false, true]]> : tensor<4x3xi1>
  %w = weft.where %cond, %pd, %ex : (tensor<4x3xi1>, tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %y = weft.mul %w, %pd : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
)mlir" + squaredSum("tensor<4x3xf64>", 2))
                     .c_str());
}

TEST(GradientCheck, ConvolutionAndPooling) {
  checkGradients((R"mlir(
func.func @main(%x: tensor<1x2x6x6xf64> {weft.param = "x"}, %w: tensor<4x1x3x3xf64> {weft.param = "w"},
             %b: tensor<4xf64> {weft.param = "b"}, %v: tensor<4x2x2x2xf64> {weft.param = "v"}) -> tensor<f64> {
  %c = weft.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf64>, tensor<4x1x3x3xf64>, tensor<4xf64>) -> tensor<1x4x3x3xf64>
  %t = weft.conv_transpose %c, %v {dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x3x3xf64>, tensor<4x2x2x2xf64>) -> tensor<1x2x6x6xf64>
  %m = weft.max_pool %t {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf64>) -> tensor<1x2x3x3xf64>
  %a = weft.avg_pool %t {count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x6x6xf64>) -> tensor<1x2x3x3xf64>
  %y = weft.add %m, %a : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
)mlir" + squaredSum("tensor<1x2x3x3xf64>", 4))
                     .c_str());
}

TEST(GradientCheck, BatchNormResizeLoss) {
  checkGradients(R"mlir(
func.func @main(%x: tensor<2x3x2x2xf64> {weft.param = "x"}, %s: tensor<3xf64> {weft.param = "s"},
             %b: tensor<3xf64> {weft.param = "b"}) -> tensor<f64> {
  %mean = weft.constant dense<0.0> : tensor<3xf64>
  %var = weft.constant dense<1.0> : tensor<3xf64>
  %n:3 = weft.batch_norm %x, %s, %b, %mean, %var {training = true} : (tensor<2x3x2x2xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) -> (tensor<2x3x2x2xf64>, tensor<3xf64>, tensor<3xf64>)
  %r = weft.resize %n#0 {coordinate_transformation_mode = "asymmetric", nearest_mode = "floor", scales = array<f64: 1.0, 1.0, 2.0, 2.0>, sizes = array<i64: 2, 3, 4, 4>} : (tensor<2x3x2x2xf64>) -> tensor<2x3x4x4xf64>
  %labels = weft.constant dense<[[[0, 1, 2, 0], [1, 1, 2, 0], [2, 2, 0, 1], [0, 0, 1, 2]], [[2, 1, 0, 0], [1, 0, 2, 2], [0, 1, 1, 2], [2, 0, 1, 0]]]> : tensor<2x4x4xi64>
  %l, %lp = weft.softmax_cross_entropy %r, %labels : (tensor<2x3x4x4xf64>, tensor<2x4x4xi64>) -> (tensor<f64>, tensor<2x3x4x4xf64>)
  return %l : tensor<f64>
}
)mlir");
}

TEST(GradientCheck, ReluAndDropout) {
  // The mask is a function of (seed, rng_id, step): the same in every run
  // here, so finite differences see the same dropout the gradient does.
  checkGradients((R"mlir(
func.func @main(%x: tensor<64xf64> {weft.param = "x"}) -> tensor<f64> {
  %r = weft.relu %x : tensor<64xf64>
  %d, %mask = weft.dropout %r {ratio = 0.3 : f64, training = true} : (tensor<64xf64>) -> (tensor<64xf64>, tensor<64xi1>)
  %y = weft.add %d, %x : (tensor<64xf64>, tensor<64xf64>) -> tensor<64xf64>
)mlir" + squaredSum("tensor<64xf64>", 1))
                     .c_str());
}

// The clip bounds are chosen so that no value of the fixed-seed draw lies
// within h of them (finite differences across a kink are meaningless).
TEST(GradientCheck, ClipTriluNllLoss) {
  checkGradients(R"mlir(
func.func @main(%x: tensor<3x4xf64> {weft.param = "x"}, %w: tensor<4xf64> {weft.param = "w"}) -> tensor<f64> {
  %c = weft.clip %x {min = -0.3 : f64, max = 0.35 : f64} : tensor<3x4xf64>
  %t = weft.trilu %c {upper = true, k = 0 : i64} : tensor<3x4xf64>
  %s = weft.mul %t, %w : (tensor<3x4xf64>, tensor<4xf64>) -> tensor<3x4xf64>
  %lp = weft.log_softmax %s {axis = 1 : i64} : tensor<3x4xf64>
  %labels = weft.constant dense<[1, 3, 0]> : tensor<3xi64>
  %l = weft.nll_loss %lp, %labels {reduction = "sum"} : (tensor<3x4xf64>, tensor<3xi64>) -> tensor<f64>
  return %l : tensor<f64>
}
)mlir");
}
