//===- NameFailedPassTest.cpp - a failing pass is named -------------------===//
//
// A pass that leaves a kernel op weft-run would refuse fails verification
// (the KernelContract trait), and the instrumentation weftc installs names
// that pass.

#include "weft/Transforms/NameFailedPass.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// Gives `weft.layer_norm` an f16 scale (the function's last argument)
/// beside its f32 input: IR whose op constraints hold (float operands, result
/// types unchanged) and that weft-run's layer_norm kernel refuses (the scale
/// is the input's dtype, or f32 beside a 16-bit input), which only the
/// KernelContract trait says.
struct HalfScaleLayerNorm
    : PassWrapper<HalfScaleLayerNorm, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HalfScaleLayerNorm)
  StringRef getArgument() const override {
    return "test-half-scale-layer-norm";
  }
  StringRef getDescription() const override {
    return "an f16 scale beside f32";
  }
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Value half = func.getArguments().back();
    func.walk([&](weft::LayerNormOp op) { op->setOperand(1, half); });
  }
};

constexpr const char *kModule = R"mlir(
func.func @f(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %h: tensor<8xf16>) -> tensor<4x8xf32> {
  %y, %m, %r = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %o = weft.relu %y : tensor<4x8xf32>
  return %o : tensor<4x8xf32>
}
)mlir";

TEST(NameFailedPass, NamesThePassThatBuiltAnOpTheRuntimeRefuses) {
  MLIRContext context;
  context.loadDialect<weft::WeftDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &context);
  ASSERT_TRUE(module);

  std::vector<std::string> diagnostics, reports;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics.push_back(d.str());
    return success();
  });
  PassManager pm(&context);
  pm.addNestedPass<func::FuncOp>(std::make_unique<HalfScaleLayerNorm>());
  pm.addInstrumentation(std::make_unique<weft::NameFailedPass>(
      [&](const std::string &m) { reports.push_back(m); }));
  EXPECT_TRUE(failed(pm.run(*module)));

  std::string all = llvm::join(diagnostics, "\n");
  EXPECT_NE(all.find("layer_norm: input 1 is f16, expected f32 (the input's "
                     "dtype)"),
            std::string::npos)
      << all;
  ASSERT_EQ(reports.size(), 1u) << "the nested pass manager reported again";
  EXPECT_EQ(reports[0], "pass 'test-half-scale-layer-norm' (an f16 scale "
                        "beside f32) failed: its messages are above");
}

TEST(NameFailedPass, SaysNothingWhenEveryPassSucceeds) {
  MLIRContext context;
  context.loadDialect<weft::WeftDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &context);
  ASSERT_TRUE(module);
  std::vector<std::string> reports;
  PassManager pm(&context);
  pm.addInstrumentation(std::make_unique<weft::NameFailedPass>(
      [&](const std::string &m) { reports.push_back(m); }));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  EXPECT_TRUE(succeeded(pm.run(*module)));
  EXPECT_TRUE(reports.empty());
}

/// weftc's runPasses: verified once by default (the IR is still refused,
/// and the message says how to find the pass), after every pass with
/// --verify-each (the pass is named).
TEST(NameFailedPass, RunPassesVerifiesOnceOrAfterEveryPass) {
  for (bool verifyEach : {false, true}) {
    SCOPED_TRACE(verifyEach ? "--verify-each" : "once");
    MLIRContext context;
    context.loadDialect<weft::WeftDialect, func::FuncDialect>();
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kModule, &context);
    ASSERT_TRUE(module);
    std::vector<std::string> diagnostics, reports;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      diagnostics.push_back(d.str());
      return success();
    });
    DefaultTimingManager timing;
    TimingScope root = timing.getRootScope();
    PassManager pm(&context);
    pm.addNestedPass<func::FuncOp>(std::make_unique<HalfScaleLayerNorm>());
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    EXPECT_TRUE(failed(
        weft::runPasses(pm, *module, verifyEach, root,
                        [&](const std::string &m) { reports.push_back(m); })));
    std::string all = llvm::join(diagnostics, "\n");
    EXPECT_NE(all.find("layer_norm: input 1 is f16"), std::string::npos) << all;
    ASSERT_EQ(reports.size(), 1u);
    EXPECT_EQ(reports[0],
              verifyEach
                  ? "pass 'test-half-scale-layer-norm' (an f16 scale beside "
                    "f32) failed: its messages are above"
                  : "the IR the passes made is invalid (its messages are "
                    "above); --verify-each names the pass that made it so");
  }
}

TEST(NameFailedPass, RunPassesAcceptsValidIRInEitherMode) {
  for (bool verifyEach : {false, true}) {
    MLIRContext context;
    context.loadDialect<weft::WeftDialect, func::FuncDialect>();
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(kModule, &context);
    ASSERT_TRUE(module);
    DefaultTimingManager timing;
    TimingScope root = timing.getRootScope();
    std::vector<std::string> reports;
    PassManager pm(&context);
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    EXPECT_TRUE(succeeded(
        weft::runPasses(pm, *module, verifyEach, root,
                        [&](const std::string &m) { reports.push_back(m); })));
    EXPECT_TRUE(reports.empty());
  }
}

} // namespace
