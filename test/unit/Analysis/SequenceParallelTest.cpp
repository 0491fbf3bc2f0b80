//===- SequenceParallelTest.cpp - the sequence-parallel region rules ------===//
//
// analyzeSequenceParallel on post-tensor-parallel graphs written by hand:
// where the region starts and stops, which dimension holds the sequence
// after reshapes and transposes, what is sliced, given f, or gathered.
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/SequenceParallel.h"

#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
struct SequenceParallelTest : ::testing::Test {
  SequenceParallelTest() {
    ctx.loadDialect<weft::WeftDialect, func::FuncDialect,
                    shard::ShardDialect>();
  }
  FailureOr<weft::SequenceParallelRegion> analyze(StringRef ir,
                                                  int64_t parts = 2) {
    module = parseSourceString<ModuleOp>(ir, &ctx);
    EXPECT_TRUE(module);
    func = *module->getOps<func::FuncOp>().begin();
    return weft::analyzeSequenceParallel(func, parts);
  }
  /// The value an op named `name` (NameLoc) defines.
  Value named(StringRef name, unsigned result = 0) {
    Value found;
    func.walk([&](Operation *op) {
      if (auto loc = dyn_cast<NameLoc>(op->getLoc()); loc &&
                                                       loc.getName() == name)
        found = op->getResult(result);
    });
    EXPECT_TRUE(found) << name.str();
    return found;
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
};

// The embedding's g (a vocab-parallel lookup's all-reduce), a position
// embedding, a LayerNorm feeding f, a row-parallel g in nn.MultiheadAttention's
// layout ([s b, h] rows, reshaped to [s, b, h] and transposed to [b, s, h]),
// its bias, the residual add, and a loss.
constexpr StringLiteral kLayer = R"mlir(
shard.grid @mesh(shape = 1x1x2)
func.func @layer(%tokens: tensor<2x4xi64> {weft.input = "tokens"},
                 %wte: tensor<8x8xf32> {weft.param = "wte"},
                 %wpe: tensor<4x8xf32> {weft.param = "wpe"},
                 %g: tensor<8xf32> {weft.param = "ln.weight"},
                 %beta: tensor<8xf32> {weft.param = "ln.bias"},
                 %w: tensor<8x8xf32> {weft.param = "proj.weight"},
                 %bias: tensor<8xf32> {weft.param = "proj.bias"}) -> tensor<f32> {
  %e = weft.vocab_parallel_gather %wte, %tokens {grid = @mesh, grid_axes = array<i16: 2>} : (tensor<8x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %es = shard.all_reduce %e on @mesh grid_axes = [2] : tensor<2x4x8xf32> -> tensor<2x4x8xf32> loc("embed.g")
  %x = weft.add %es, %wpe : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("x")
  %n, %m, %r = weft.layer_norm %x, %g, %beta {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) loc("ln")
  %t = weft.transpose %n {perm = array<i64: 1, 0, 2>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32> loc("to_sbh")
  %f = weft.copy_to_tensor_parallel %t {grid = @mesh, grid_axes = array<i16: 2>} : tensor<4x2x8xf32> loc("f")
  %rows = weft.reshape %f {shape = array<i64: 8, 8>} : (tensor<4x2x8xf32>) -> tensor<8x8xf32>
  %p = weft.matmul %rows, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = shard.all_reduce %p on @mesh grid_axes = [2] : tensor<8x8xf32> -> tensor<8x8xf32> loc("proj.g")
  %yb = weft.add %y, %bias : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32> loc("yb")
  %sbh = weft.reshape %yb {shape = array<i64: 4, 2, 8>} : (tensor<8x8xf32>) -> tensor<4x2x8xf32> loc("sbh")
  %bsh = weft.transpose %sbh {perm = array<i64: 1, 0, 2>} : (tensor<4x2x8xf32>) -> tensor<2x4x8xf32> loc("bsh")
  %z = weft.add %x, %bsh : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("z")
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
)mlir";

TEST_F(SequenceParallelTest, RegionRunsFromTheEmbeddingToEveryExit) {
  FailureOr<weft::SequenceParallelRegion> region = analyze(kLayer);
  ASSERT_TRUE(succeeded(region));
  auto dimOf = [&](Value v) {
    auto it = region->sharded.find(v);
    return it == region->sharded.end() ? -1 : it->second;
  };
  // [b, s, h]: dimension 1; through the transpose to [s, b, h]: 0; the
  // row-parallel g's [s b, h] rows (s outer): 0.
  EXPECT_EQ(dimOf(named("embed.g")), 1);
  EXPECT_EQ(dimOf(named("x")), 1);
  EXPECT_EQ(dimOf(named("ln", 0)), 1);
  EXPECT_EQ(dimOf(named("ln", 1)), 1); // the statistics too
  EXPECT_EQ(dimOf(named("to_sbh")), 0);
  EXPECT_EQ(dimOf(named("proj.g")), 0);
  EXPECT_EQ(dimOf(named("yb")), 0);
  EXPECT_EQ(dimOf(named("sbh")), 0);
  EXPECT_EQ(dimOf(named("bsh")), 1);
  EXPECT_EQ(dimOf(named("z")), 1);
  // f's copy and the block behind it stay whole.
  EXPECT_EQ(dimOf(named("f")), -1);
  // Both all-reduces enter the region (they become reduce-scatters).
  EXPECT_TRUE(region->ops.contains(named("embed.g").getDefiningOp()));
  EXPECT_TRUE(region->ops.contains(named("proj.g").getDefiningOp()));
  // The position table is read along the sequence (dimension 0 of [s, h]):
  // sliced; the LayerNorm's weights and the bias repeat along it: f.
  Block &body = func.getBody().front();
  ASSERT_EQ(region->slices.size(), 1u);
  EXPECT_EQ(region->slices.front().first, body.getArgument(2));
  EXPECT_EQ(region->slices.front().second, 0);
  EXPECT_EQ(region->broadcasts.size(), 3u);
  EXPECT_TRUE(region->broadcasts.contains(body.getArgument(3)));
  EXPECT_TRUE(region->broadcasts.contains(body.getArgument(4)));
  EXPECT_TRUE(region->broadcasts.contains(body.getArgument(6)));
  // Leaving: into f's copy, and into the loss.
  EXPECT_EQ(region->gathers.size(), 2u);
  EXPECT_TRUE(region->gathers.contains(named("to_sbh")));
  EXPECT_TRUE(region->gathers.contains(named("z")));
}

TEST_F(SequenceParallelTest, BatchMajorRowsStopTheRegion) {
  // Hugging Face GPT-2's Conv1D: [b, s, h] flattened to [b s, h] rows. A
  // sequence shard of them is b blocks, which the region does not take:
  // the reshape reads the whole LayerNorm output (gathered), and the
  // all-reduce of the rows stays, its reshaped result sliced.
  FailureOr<weft::SequenceParallelRegion> region = analyze(R"mlir(
shard.grid @mesh(shape = 1x1x2)
func.func @rows(%tokens: tensor<2x4xi64> {weft.input = "tokens"},
                %wte: tensor<8x8xf32> {weft.param = "wte"},
                %w: tensor<8x8xf32> {weft.param = "w"}) -> tensor<f32> {
  %e = weft.gather %wte, %tokens {axis = 0 : i64} : (tensor<8x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("embed")
  %x = weft.relu %e : tensor<2x4x8xf32> loc("x")
  %rows = weft.reshape %x {shape = array<i64: 8, 8>} : (tensor<2x4x8xf32>) -> tensor<8x8xf32> loc("rows")
  %p = weft.matmul %rows, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = shard.all_reduce %p on @mesh grid_axes = [2] : tensor<8x8xf32> -> tensor<8x8xf32> loc("g")
  %back = weft.reshape %y {shape = array<i64: 2, 4, 8>} : (tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("back")
  %z = weft.add %x, %back : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("z")
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
)mlir");
  ASSERT_TRUE(succeeded(region));
  // A replicated table: the lookup is sliced for its first reader.
  EXPECT_TRUE(region->slices.contains(named("embed")));
  EXPECT_EQ(region->sharded.lookup(named("x")), 1);
  EXPECT_FALSE(region->sharded.contains(named("rows")));
  EXPECT_TRUE(region->gathers.contains(named("x")));
  EXPECT_FALSE(region->ops.contains(named("g").getDefiningOp()));
  EXPECT_EQ(region->slices.lookup(named("back")), 1);
  EXPECT_TRUE(region->broadcasts.empty());
}

TEST_F(SequenceParallelTest, LayerNormOverTheSequenceIsAnExit) {
  // A LayerNorm over [s, h] needs the whole sequence: it reads a gather.
  FailureOr<weft::SequenceParallelRegion> region = analyze(R"mlir(
shard.grid @mesh(shape = 1x1x2)
func.func @norm(%tokens: tensor<2x4xi64> {weft.input = "tokens"},
                %wte: tensor<8x8xf32> {weft.param = "wte"},
                %g: tensor<4x8xf32> {weft.param = "g"},
                %b: tensor<4x8xf32> {weft.param = "b"}) -> tensor<f32> {
  %e = weft.gather %wte, %tokens {axis = 0 : i64} : (tensor<8x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %x = weft.relu %e : tensor<2x4x8xf32> loc("x")
  %n, %m, %r = weft.layer_norm %x, %g, %b {axis = 1 : i64} : (tensor<2x4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) loc("ln")
  %l = weft.reduce_sum %n {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
)mlir");
  ASSERT_TRUE(succeeded(region));
  EXPECT_EQ(region->sharded.lookup(named("x")), 1);
  EXPECT_FALSE(region->ops.contains(named("ln").getDefiningOp()));
  EXPECT_TRUE(region->gathers.contains(named("x")));
}
} // namespace
