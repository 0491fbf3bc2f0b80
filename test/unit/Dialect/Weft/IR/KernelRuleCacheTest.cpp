//===- KernelRuleCacheTest.cpp - the kernel rule memo only saves work -----===//
//
// KernelRuleCache.h: a key is what a kernel's rule reads, so ops the rule
// treats alike share one (every micro-batch's copy of an op) and ops it may
// treat differently never do; and a result type the rule refuses is refused
// after the rule was memoised for the same key.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/KernelRuleCache.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlir;
using Cache = weft::KernelRuleCache;

namespace {

struct KernelRuleCacheTest : ::testing::Test {
  KernelRuleCacheTest() {
    ctx.loadDialect<weft::WeftDialect, func::FuncDialect>();
  }
  /// The ops of `body`'s function (its arguments: %x 4x2, %y 4x3, f32), in
  /// order.
  std::vector<Operation *> parse(const std::string &body) {
    // Verified by the test, not by the parser.
    ParserConfig config(&ctx, /*verifyAfterParse=*/false);
    module = parseSourceString<ModuleOp>(
        "func.func @f(%x: tensor<4x2xf32>, %y: tensor<4x3xf32>) {\n" + body +
            "  return\n}\n",
        config);
    std::vector<Operation *> ops;
    if (module)
      module->walk([&](Operation *op) {
        if (op->getDialect() && op->getDialect()->getNamespace() == "weft")
          ops.push_back(op);
      });
    return ops;
  }
  static Cache::Key key(Operation *op) {
    return Cache::key(Cache::Asker::Verifier,
                      op->getName().getAsOpaquePointer(),
                      op->getAttrDictionary(), op->getOperandTypes());
  }
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
};

} // namespace

TEST_F(KernelRuleCacheTest, OnlyTheCompilersBookkeepingIsLeftOutOfAKey) {
  std::vector<Operation *> ops = parse(R"mlir(
  %a = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %b = weft.transpose %x {perm = array<i64: 1, 0>, weft.task = #weft.task<B, micro_batch = 3>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %c = weft.transpose %y {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %d = weft.transpose %x {perm = array<i64: 1, 0>, note = 1 : i64} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %e = weft.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<4xf32>
  %g = weft.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : (tensor<4x2xf32>) -> tensor<4x1xf32>
)mlir");
  ASSERT_EQ(ops.size(), 6u);
  EXPECT_EQ(key(ops[0]), key(ops[1])) << "weft.* attributes are bookkeeping";
  EXPECT_NE(key(ops[0]), key(ops[2])) << "operand types";
  EXPECT_NE(key(ops[0]), key(ops[3])) << "any other attribute";
  EXPECT_NE(key(ops[4]), key(ops[5])) << "an attribute's value";
  EXPECT_NE(Cache::key(Cache::Asker::Inference,
                       ops[0]->getName().getAsOpaquePointer(),
                       ops[0]->getAttrDictionary(), ops[0]->getOperandTypes()),
            key(ops[0]))
      << "inference and the verifier read attributes differently";
}

TEST_F(KernelRuleCacheTest, AWrongResultTypeIsRefusedAfterTheRuleIsKnown) {
  // The first op memoises its rule; the second has the same key and a
  // result type the rule does not give.
  std::vector<Operation *> ops = parse(R"mlir(
  %a = weft.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<4xf32>
  %b = weft.reduce_sum %x {axes = array<i64: 1>, keepdims = false, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<4x2xf32>) -> tensor<2xf32>
)mlir");
  ASSERT_EQ(ops.size(), 2u);
  ASSERT_EQ(key(ops[0]), key(ops[1]));
  EXPECT_TRUE(succeeded(verify(ops[0])));
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
    messages.push_back(d.str());
    return success();
  });
  EXPECT_TRUE(failed(verify(ops[1])));
  ASSERT_FALSE(messages.empty());
  EXPECT_NE(messages[0].find("tensor<4xf32>"), std::string::npos)
      << messages[0];
  // And the rule still holds for the first.
  EXPECT_TRUE(succeeded(verify(ops[0])));
}
