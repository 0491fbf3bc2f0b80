//===- MemoryPlanTest.cpp - static arena layout ---------------------------===//

#include "weft/Analysis/MemoryPlan.h"

#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
struct MemoryPlanTest : ::testing::Test {
  MemoryPlanTest() { ctx.loadDialect<weft::WeftDialect, func::FuncDialect>(); }
  weft::MemoryPlan plan(StringRef ir) {
    module = parseSourceString<ModuleOp>(ir, &ctx);
    EXPECT_TRUE(module);
    return weft::planMemory(cast<func::FuncOp>(module->getBody()->front()));
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

/// The layout promise: storages live at the same step never share bytes.
void expectNoLiveOverlap(const weft::MemoryPlan &p) {
  for (size_t i = 0; i < p.storages.size(); ++i)
    for (size_t j = i + 1; j < p.storages.size(); ++j) {
      const weft::Storage &a = p.storages[i], &b = p.storages[j];
      if (!weft::liveTogether(a, b))
        continue;
      bool disjoint =
          a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset;
      EXPECT_TRUE(disjoint) << "storages " << i << " and " << j << " overlap";
    }
}
} // namespace

TEST_F(MemoryPlanTest, ChainReusesMemoryAndPeakIsHandComputed) {
  // A chain of four 1 KiB elementwise ops: at most two activations are live
  // at once (an op's input and output), so after the 1 KiB input the arena
  // holds 2 activation slots: 3 KiB in all.
  auto p = plan(R"mlir(
    func.func @f(%x: tensor<256xf32> {weft.input = "x"}) -> tensor<256xf32> {
      %0 = weft.relu %x : tensor<256xf32>
      %1 = weft.exp %0 : tensor<256xf32>
      %2 = weft.tanh %1 : tensor<256xf32>
      %3 = weft.neg %2 : tensor<256xf32>
      return %3 : tensor<256xf32>
    })mlir");
  EXPECT_EQ(p.arenaBytes, 3 * 1024);
  expectNoLiveOverlap(p);
}

TEST_F(MemoryPlanTest, DiamondKeepsBothBranchesLive) {
  // %a and %b are both live when %c is computed; %d may reuse %a's bytes.
  auto p = plan(R"mlir(
    func.func @f(%x: tensor<16xf32> {weft.input = "x"}) -> tensor<16xf32> {
      %a = weft.relu %x : tensor<16xf32>
      %b = weft.exp %x : tensor<16xf32>
      %c = weft.add %a, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
      %d = weft.neg %c : tensor<16xf32>
      return %d : tensor<16xf32>
    })mlir");
  expectNoLiveOverlap(p);
  // x, a, b, c are live together at step 2: 4 slots of 64 bytes.
  EXPECT_EQ(p.arenaBytes, 4 * 64);
}

TEST_F(MemoryPlanTest, ViewsShareStorageAndExtendItsLifetime) {
  auto p = plan(R"mlir(
    func.func @f(%x: tensor<4x4xf32> {weft.input = "x"}) -> tensor<16xf32> {
      %a = weft.relu %x : tensor<4x4xf32>
      %v = weft.reshape %a {shape = array<i64: 16>} : (tensor<4x4xf32>) -> tensor<16xf32>
      %b = weft.exp %x : tensor<4x4xf32>
      %c = weft.neg %v : tensor<16xf32>
      return %c : tensor<16xf32>
    })mlir");
  auto func = cast<func::FuncOp>(module->getBody()->front());
  Block &body = func.getBody().front();
  Value a = body.getOperations().front().getResult(0);
  Value v = std::next(body.begin())->getResult(0);
  EXPECT_EQ(p.storageOf.lookup(a), p.storageOf.lookup(v));
  // %a's storage lives until %c (step 3) reads the view.
  EXPECT_EQ(p.storages[p.storageOf.lookup(a)].end, 3);
  expectNoLiveOverlap(p);
}

TEST_F(MemoryPlanTest, ArgumentsAndConstantsLiveAllStep) {
  auto p = plan(R"mlir(
    func.func @f(%x: tensor<3xf32> {weft.input = "x"}, %w: tensor<3xf32> {weft.param = "w"}) -> tensor<3xf32> {
      %c = weft.constant dense<1.0> : tensor<3xf32>
      %0 = weft.add %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %1 = weft.mul %0, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      return %1 : tensor<3xf32>
    })mlir");
  for (const weft::Storage &s : p.storages)
    if (s.kind != weft::BufferKind::Activation) {
      EXPECT_EQ(s.start, 0);
      EXPECT_EQ(s.end, 2);
    }
  expectNoLiveOverlap(p);
}
