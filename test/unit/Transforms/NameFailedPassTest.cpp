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

/// Turns `weft.exp` into an exp of i32 (the function's last argument), its
/// result retyped to match: IR whose op constraints hold (any element type,
/// operand and result alike) and that weft-run's exp kernel refuses, which
/// only the KernelContract trait says.
struct ExpOfIntegers : PassWrapper<ExpOfIntegers, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpOfIntegers)
  StringRef getArgument() const override { return "test-exp-of-integers"; }
  StringRef getDescription() const override { return "an exp of i32"; }
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Value ints = func.getArguments().back();
    func.walk([&](weft::ExpOp op) {
      op->setOperand(0, ints);
      op->getResult(0).setType(ints.getType());
    });
  }
};

constexpr const char *kModule = R"mlir(
func.func @f(%x: tensor<4xf32>, %i: tensor<4xi32>) -> tensor<4xf32> {
  %e = weft.exp %x : tensor<4xf32>
  %r = weft.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
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
  pm.addNestedPass<func::FuncOp>(std::make_unique<ExpOfIntegers>());
  pm.addInstrumentation(std::make_unique<weft::NameFailedPass>(
      [&](const std::string &m) { reports.push_back(m); }));
  EXPECT_TRUE(failed(pm.run(*module)));

  std::string all = llvm::join(diagnostics, "\n");
  EXPECT_NE(all.find("'weft.exp' op weft-run's exp kernel refuses it: input "
                     "0 is i32, expected f32, f64, f16 or bf16"),
            std::string::npos)
      << all;
  ASSERT_EQ(reports.size(), 1u) << "the nested pass manager reported again";
  EXPECT_EQ(reports[0], "pass 'test-exp-of-integers' (an exp of i32) "
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
