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

/// Hands layer_norm_grad an f16 mean (the function's last argument) after
/// it was built: IR that weft-run's kernel refuses, and so the verifier
/// (the op's types are its kernel rule's).
struct HalfTheMean : PassWrapper<HalfTheMean, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HalfTheMean)
  StringRef getArgument() const override { return "test-half-the-mean"; }
  StringRef getDescription() const override { return "an f16 layer-norm mean"; }
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    func.walk([&](weft::LayerNormGradOp op) {
      op->setOperand(2, func.getArguments().back());
    });
  }
};

constexpr const char *kModule = R"mlir(
func.func @f(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf32>,
             %m16: tensor<4x1xf16>) -> tensor<4x8xf32> {
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %m, %x {axis = 1 : i64}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>,
         tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx : tensor<4x8xf32>
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
  pm.addNestedPass<func::FuncOp>(std::make_unique<HalfTheMean>());
  pm.addInstrumentation(std::make_unique<weft::NameFailedPass>(
      [&](const std::string &m) { reports.push_back(m); }));
  EXPECT_TRUE(failed(pm.run(*module)));

  std::string all = llvm::join(diagnostics, "\n");
  EXPECT_NE(all.find("layer_norm_grad: input 2 (the mean) is [4x1] f16"),
            std::string::npos)
      << all;
  ASSERT_EQ(reports.size(), 1u) << "the nested pass manager reported again";
  EXPECT_EQ(reports[0], "pass 'test-half-the-mean' (an f16 layer-norm mean) "
                        "failed: its messages are above");
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

} // namespace
