//===- ImportONNXTest.cpp - importer behaviour on small text models -------===//

#include "weft/Import/ONNX/ImportONNX.h"

#include "weft/Analysis/ModelSummary.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
struct ImportTest : ::testing::Test {
  OwningOpRef<ModuleOp> import(StringRef text,
                               const weft::ImportOptions &options = {}) {
    diagnostics.clear();
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      return success();
    });
    return weft::importONNX(text, "test.onnxtxt", /*isText=*/true, options,
                            &ctx);
  }
  func::FuncOp main(ModuleOp module) {
    return cast<func::FuncOp>(module.getBody()->front());
  }

  MLIRContext ctx;
  std::string diagnostics;
};
} // namespace

TEST_F(ImportTest, ClassifiesParametersStateAndConstants) {
  // w and b are parameters, mean/var are batch-norm state, the int64 shape is
  // a constant; unused is dead and must not become an argument.
  auto module = import(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[2, 3, 4, 4] x) => (float[2, 48] y)
    <float[3] s = {1, 1, 1}, float[3] b = {0, 0, 0}, float[3] mean = {0, 0, 0},
     float[3] var = {1, 1, 1}, int64[2] shape = {2, -1}, float[7] unused = {1,2,3,4,5,6,7}> {
      n = BatchNormalization(x, s, b, mean, var)
      y = Reshape(n, shape)
      dead = Relu(unused)
    })");
  ASSERT_TRUE(module) << diagnostics;
  func::FuncOp func = main(*module);
  ASSERT_EQ(func.getNumArguments(), 5u);
  auto kind = [&](unsigned i) -> std::string {
    for (StringRef k : {weft::kInputAttr, weft::kParamAttr, weft::kStateAttr})
      if (auto name = func.getArgAttrOfType<StringAttr>(i, k))
        return (k + "=" + name.getValue()).str();
    return "none";
  };
  EXPECT_EQ(kind(0), "weft.input=x");
  EXPECT_EQ(kind(1), "weft.param=s");
  EXPECT_EQ(kind(2), "weft.param=b");
  EXPECT_EQ(kind(3), "weft.state=mean");
  EXPECT_EQ(kind(4), "weft.state=var");
  weft::ModelSummary summary = weft::summarizeModel(func);
  EXPECT_EQ(summary.params, 6);
  EXPECT_EQ(summary.stateBytes, 24);
}

TEST_F(ImportTest, InputShapeFixesSymbolicDims) {
  const char *model = R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[N, 4] x) => (float[N, 4] y) { y = Relu(x) })";
  EXPECT_FALSE(import(model));
  EXPECT_NE(diagnostics.find("input 'x' has unresolved dim 0 ('N')"),
            std::string::npos);
  weft::ImportOptions options;
  std::string error;
  ASSERT_TRUE(
      succeeded(weft::parseInputShape("x=6x4", options.inputShapes, error)));
  auto module = import(model, options);
  ASSERT_TRUE(module) << diagnostics;
  EXPECT_EQ(main(*module).getArgumentTypes()[0],
            RankedTensorType::get({6, 4}, Float32Type::get(&ctx)));
}

TEST_F(ImportTest, ParseInputShapeRejectsMalformedSpecs) {
  std::map<std::string, llvm::SmallVector<int64_t>> shapes;
  std::string error;
  EXPECT_TRUE(failed(weft::parseInputShape("x", shapes, error)));
  EXPECT_TRUE(failed(weft::parseInputShape("x=3x-1", shapes, error)));
  EXPECT_TRUE(succeeded(weft::parseInputShape("scalar=", shapes, error)));
  EXPECT_TRUE(shapes["scalar"].empty());
}

TEST_F(ImportTest, OlderOpsetIsConverted) {
  // Opset 11 Unsqueeze takes axes as an attribute; opset 13 as an input. The
  // version converter bridges it and the result is the same reshape.
  auto module = import(R"(
    <ir_version: 7, opset_import: ["" : 11]>
    g (float[3] x) => (float[1, 3] y) { y = Unsqueeze <axes = [0]> (x) })");
  ASSERT_TRUE(module) << diagnostics;
  EXPECT_EQ(main(*module).getResultTypes()[0],
            RankedTensorType::get({1, 3}, Float32Type::get(&ctx)));
}

TEST_F(ImportTest, SupportedOpsCoverTheIssueList) {
  auto ops = weft::supportedONNXOps();
  for (StringRef op : {"MatMul",
                       "Gemm",
                       "Add",
                       "Sub",
                       "Mul",
                       "Div",
                       "Pow",
                       "Sqrt",
                       "Reciprocal",
                       "Neg",
                       "Exp",
                       "Log",
                       "Erf",
                       "Tanh",
                       "Relu",
                       "Sigmoid",
                       "Softmax",
                       "LogSoftmax",
                       "LayerNormalization",
                       "ReduceMean",
                       "ReduceSum",
                       "ReduceMax",
                       "Reshape",
                       "Transpose",
                       "Split",
                       "Concat",
                       "Slice",
                       "Gather",
                       "Unsqueeze",
                       "Squeeze",
                       "Flatten",
                       "Expand",
                       "Where",
                       "Equal",
                       "Cast",
                       "Constant",
                       "ConstantOfShape",
                       "Shape",
                       "Range",
                       "Trilu",
                       "Identity",
                       "Dropout",
                       "Pad",
                       "Clip",
                       "Conv",
                       "ConvTranspose",
                       "BatchNormalization",
                       "MaxPool",
                       "AveragePool",
                       "GlobalAveragePool",
                       "Resize",
                       "SoftmaxCrossEntropyLoss",
                       "NegativeLogLikelihoodLoss"})
    EXPECT_TRUE(llvm::is_contained(ops, op)) << op.str();
}
