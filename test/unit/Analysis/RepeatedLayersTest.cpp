//===- RepeatedLayersTest.cpp - a model's repeated layers, counted --------===//
//
// countRepeatedLayers and repeatedLayers on residual stacks written out:
// n blocks of one residual half (a ResNet's), n blocks of two halves (a
// transformer's attention and MLP), a mask constant every block reads.
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/RepeatedLayers.h"

#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;

namespace {
constexpr const char *kType = "tensor<4x4xf32>";

/// x + act(x w): one residual half, `act` weft.relu or weft.tanh.
std::string half(int &n, const std::string &act, bool masked) {
  std::string x = "%x" + std::to_string(n), i = std::to_string(n);
  std::string text = "  %h" + i + " = weft.matmul " + x + ", %w : (" + kType +
                     ", " + kType + ") -> " + kType + "\n  %a" + i + " = " +
                     act + " %h" + i + " : " + kType + "\n";
  std::string branch = "%a" + i;
  if (masked) {
    text += "  %m" + i + " = weft.mul %a" + i + ", %mask : (" + kType + ", " +
            kType + ") -> " + kType + "\n";
    branch = "%m" + i;
  }
  ++n;
  text += "  %x" + std::to_string(n) + " = weft.add " + x + ", " + branch +
          " : (" + kType + ", " + kType + ") -> " + kType + "\n";
  return text;
}

/// A stem (tanh), `blocks` blocks of the given halves, a sum as the loss.
std::string stack(int blocks, const std::vector<std::string> &halves,
                  bool masked = false) {
  std::string text = std::string("func.func @f(%in: ") + kType +
                     " {weft.input = \"x\"}, %w: " + kType +
                     " {weft.param = \"w\"}) -> tensor<f32> {\n";
  if (masked)
    text += std::string("  %mask = weft.constant dense<1.0> : ") + kType + "\n";
  text += std::string("  %x0 = weft.tanh %in : ") + kType + "\n";
  int n = 0;
  for (int b = 0; b < blocks; ++b)
    for (const std::string &act : halves)
      text += half(n, act, masked);
  text += "  %l = weft.reduce_sum %x" + std::to_string(n) +
          " {axes = array<i64: 0, 1>, keepdims = false} : (" + kType +
          ") -> tensor<f32>\n  return %l : tensor<f32>\n}\n";
  return text;
}

struct RepeatedLayersTest : ::testing::Test {
  RepeatedLayersTest() {
    ctx.loadDialect<weft::WeftDialect, func::FuncDialect>();
  }
  int64_t count(const std::string &ir) {
    module = parseSourceString<ModuleOp>(ir, &ctx);
    EXPECT_TRUE(module) << ir;
    if (!module)
      return -1;
    return weft::countRepeatedLayers(*module->getOps<func::FuncOp>().begin());
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

TEST_F(RepeatedLayersTest, CountsOneHalfBlocks) {
  EXPECT_EQ(count(stack(5, {"weft.relu"})), 5);
  EXPECT_EQ(count(stack(2, {"weft.relu"})), 2);
}

TEST_F(RepeatedLayersTest, ASingleBlockRepeatsNothing) {
  EXPECT_EQ(count(stack(1, {"weft.relu"})), 0);
}

TEST_F(RepeatedLayersTest, CountsTwoHalfBlocksOnce) {
  // Attention and MLP halves: the unit is the pair, 4 of them, not 8.
  EXPECT_EQ(count(stack(4, {"weft.relu", "weft.tanh"})), 4);
}

TEST_F(RepeatedLayersTest, AConstantEveryBlockReadsIsFree) {
  // A shared causal mask read by every block must not cross every cut.
  EXPECT_EQ(count(stack(6, {"weft.relu"}, /*masked=*/true)), 6);
}

TEST_F(RepeatedLayersTest, GroupsEachBlocksHalvesTogether) {
  module =
      parseSourceString<ModuleOp>(stack(3, {"weft.relu", "weft.tanh"}), &ctx);
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  std::vector<Operation *> ops;
  for (Operation &op : func.getBody().front().without_terminator())
    ops.push_back(&op);
  auto layers = weft::repeatedLayers(weft::residualSegments(ops));
  // The stem, three blocks of two halves (3 ops each), the loss.
  ASSERT_EQ(layers.size(), 5u);
  EXPECT_EQ(layers[0].size(), 1u);
  for (int b = 1; b <= 3; ++b)
    EXPECT_EQ(layers[b].size(), 6u) << "block " << b;
  EXPECT_EQ(layers[4].size(), 1u);
}
} // namespace

namespace {
TEST_F(RepeatedLayersTest, ABoundaryCarriesTheResidualStream) {
  // One 4x4 f32 value crosses from a block to the next: 64 bytes.
  module = parseSourceString<ModuleOp>(
      stack(3, {"weft.relu", "weft.tanh"}, /*masked=*/true), &ctx);
  ASSERT_TRUE(module);
  EXPECT_EQ(weft::layerBoundaryBytes(*module->getOps<func::FuncOp>().begin()),
            64);
  module = parseSourceString<ModuleOp>(stack(1, {"weft.relu"}), &ctx);
  ASSERT_TRUE(module);
  EXPECT_EQ(weft::layerBoundaryBytes(*module->getOps<func::FuncOp>().begin()),
            0);
}
} // namespace

namespace {
TEST_F(RepeatedLayersTest, TruncationKeepsTheFirstLayers) {
  // 5 two-half blocks cut to 2: the stem, 2 blocks, the loss; the blocks
  // share %w, so no argument goes.
  EXPECT_EQ(count(stack(5, {"weft.relu", "weft.tanh"}, true)), 5);
  auto func = *module->getOps<func::FuncOp>().begin();
  EXPECT_EQ(weft::truncateRepeatedLayers(func, 2), 5);
  EXPECT_TRUE(succeeded(verify(*module)));
  EXPECT_EQ(weft::countRepeatedLayers(func), 2);
  int64_t ops = 0;
  func.walk([&](Operation *op) { ++ops; });
  // func, mask, stem, 2 blocks of two 4-op halves, sum, return.
  EXPECT_EQ(ops, 1 + 1 + 1 + 16 + 1 + 1);
  EXPECT_EQ(func.getNumArguments(), 2u);
  // Nothing to cut: as many copies as kept, or none repeat.
  EXPECT_EQ(weft::truncateRepeatedLayers(func, 2), 0);
  EXPECT_EQ(count(stack(1, {"weft.relu"})), 0);
  EXPECT_EQ(
      weft::truncateRepeatedLayers(*module->getOps<func::FuncOp>().begin(), 1),
      0);
}
} // namespace

namespace {
TEST_F(RepeatedLayersTest, AMicroBatchsSliceOfItsTargetsIsAnInput) {
  // weft-accumulate-microbatches slices each micro-batch's targets at its
  // start; the loss reads them at the end. Counted from its definition, the
  // slice crossed every cut and the blocks were one part: full recompute
  // by layer re-ran a micro-batch's whole forward at once.
  std::string text = stack(4, {"weft.relu", "weft.tanh"});
  auto replace = [&](const std::string &from, const std::string &to) {
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
  };
  std::string t = kType;
  replace("{weft.param = \"w\"})",
          "{weft.param = \"w\"}, %y: " + t + " {weft.input = \"y\"})");
  replace("  %x0 = ", "  %t = weft.slice %y {ends = array<i64: 4, 4>, "
                      "starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} "
                      ": (" +
                          t + ") -> " + t + "\n  %x0 = ");
  replace("  %l = weft.reduce_sum %x8", "  %lt = weft.add %x8, %t : (" + t +
                                            ", " + t + ") -> " + t +
                                            "\n  %l = weft.reduce_sum %lt");
  EXPECT_EQ(count(text), 4) << text;
}
} // namespace
