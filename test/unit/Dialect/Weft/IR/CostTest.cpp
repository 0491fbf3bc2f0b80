//===- CostTest.cpp - CostOpInterface on IR parsed from strings -----------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
struct CostTest : ::testing::Test {
  CostTest() { ctx.loadDialect<weft::WeftDialect, func::FuncDialect>(); }

  /// Parses `body` as a function and returns its first op's cost interface.
  weft::CostOpInterface firstOp(StringRef ir) {
    module = parseSourceString<ModuleOp>(ir, &ctx);
    EXPECT_TRUE(module);
    auto func = cast<func::FuncOp>(module->getBody()->front());
    return cast<weft::CostOpInterface>(func.getBody().front().front());
  }

  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};
} // namespace

TEST_F(CostTest, GemmWithBiasCountsTheAddition) {
  // [M=4, K=3] x [K=3, N=5] + C: 2*4*5*3 = 120 plus 4*5 = 20 for the add
  // (beta 1, a Linear's bias), 2*4*5 = 40 with beta's product.
  auto op = firstOp(R"mlir(
    func.func @f(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>, %c: tensor<5xf32>) -> tensor<4x5xf32> {
      %0 = weft.gemm %a, %b, %c {transB = true} : (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5xf32>) -> tensor<4x5xf32>
      return %0 : tensor<4x5xf32>
    })mlir");
  EXPECT_EQ(op.getFlops(), 140);
  op->setAttr("beta", Builder(&ctx).getF64FloatAttr(2.0));
  EXPECT_EQ(op.getFlops(), 160);
  EXPECT_EQ(op.getBytesRead(), (12 + 15 + 5) * 4);
  EXPECT_EQ(op.getBytesWritten(), 20 * 4);
}

TEST_F(CostTest, ConvTransposeScattersEachInput) {
  // Each of the 1*3*4*4 = 48 inputs scatters into M/group * k*k = 2*9 outputs.
  auto op = firstOp(R"mlir(
    func.func @f(%x: tensor<1x3x4x4xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x2x8x8xf32> {
      %0 = weft.conv_transpose %x, %w {dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x2x8x8xf32>
      return %0 : tensor<1x2x8x8xf32>
    })mlir");
  EXPECT_EQ(op.getFlops(), 2 * 48 * 18);
}

TEST_F(CostTest, InactiveDropoutIsFree) {
  auto op = firstOp(R"mlir(
    func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
      %0, %m = weft.dropout %x {ratio = 0.0 : f64, training = true} : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xi1>)
      return %0 : tensor<8xf32>
    })mlir");
  EXPECT_EQ(op.getFlops(), 0);
}
