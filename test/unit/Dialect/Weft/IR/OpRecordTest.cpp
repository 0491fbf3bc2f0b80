//===- OpRecordTest.cpp - every dialect op has its record, and back -------===//
//
// The op records (runtime/include/weft/ops/Ops.def) against the dialect the
// compiler registers: an op added to a .td file without a record, a record
// whose mnemonic is not its class's, or a Gradient column that says what the
// op's interfaces do not, fails here naming the op. (Kernels: the spec entry
// and the CPU kernel are test/unit/runtime's, the CUDA kernel the emulator
// test's.)
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/OpRecords.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

using namespace mlir;
namespace ops = weft::ops;

namespace {

struct OpRecordTest : ::testing::Test {
  OpRecordTest() { ctx.loadDialect<weft::WeftDialect>(); }
  MLIRContext ctx;
};

/// Every registered `weft.*` op, by mnemonic.
std::map<std::string, RegisteredOperationName> dialectOps(MLIRContext &ctx) {
  std::map<std::string, RegisteredOperationName> out;
  for (RegisteredOperationName name : ctx.getRegisteredOperations())
    if (name.getDialectNamespace() == weft::WeftDialect::getDialectNamespace())
      out.emplace(name.stripDialect().str(), name);
  return out;
}

} // namespace

TEST_F(OpRecordTest, EveryDialectOpHasARecord) {
  auto registered = dialectOps(ctx);
  ASSERT_GT(registered.size(), 80u);
  for (const auto &[mnemonic, name] : registered)
    EXPECT_NE(ops::findOpRecord(mnemonic), nullptr)
        << "weft." << mnemonic << " has no record in weft/ops/Ops.def";
  std::set<std::string_view> seen;
  for (const ops::OpRecord &r : ops::opRecords()) {
    EXPECT_TRUE(seen.insert(r.mnemonic).second)
        << "two records for " << r.mnemonic;
    EXPECT_TRUE(registered.count(std::string(r.mnemonic)))
        << "the record " << r.mnemonic << " names no registered op";
  }
}

/// Each record's Id is the dialect class of its mnemonic (weft::<Id>Op).
TEST_F(OpRecordTest, RecordsNameTheirClasses) {
#define WEFT_OP(Id, mnemonic, ...)                                             \
  EXPECT_EQ(::weft::Id##Op::getOperationName().str(),                          \
            std::string("weft.") + mnemonic);
#include "weft/ops/Ops.def"
}

/// The Gradient column says what weft-autodiff will find: a rule
/// (GradientOpInterface) exactly where the record says Rule. Every op has
/// a cost (CostOpInterface), kernels and instructions alike.
TEST_F(OpRecordTest, GradientColumnMatchesTheInterfaces) {
  for (const auto &[mnemonic, name] : dialectOps(ctx)) {
    const ops::OpRecord *r = ops::findOpRecord(mnemonic);
    ASSERT_NE(r, nullptr) << mnemonic;
    EXPECT_EQ(name.hasInterface<weft::GradientOpInterface>(),
              r->gradient == ops::Gradient::Rule)
        << "weft." << mnemonic << ": the record says "
        << ops::name(r->gradient);
    EXPECT_TRUE(name.hasInterface<weft::CostOpInterface>()) << mnemonic;
  }
}

/// The per-element FLOP counts as each op's .td description derives them
/// (CostOpInterface's units), pinned: changing one in the record fails here
/// (the compiler's cost model and the runtime's spec both read the record,
/// so they cannot disagree with each other, only with this derivation).
TEST(OpRecords, PerElementFlopsAreTheDerivedCounts) {
  using ops::FlopRule;
  struct Pin {
    ops::Op op;
    FlopRule::Base base;
    int64_t perElement;
  };
  const Pin pins[] = {
      {ops::Op::Add, FlopRule::Output, 1},
      {ops::Op::Exp, FlopRule::Output, 1},
      {ops::Op::Where, FlopRule::Output, 1},
      // erf form: the chain's div, erf, add, mul, mul.
      {ops::Op::Gelu, FlopRule::Output, 5},
      // tanh form: x^3, two scalings, add, tanh, add, two products.
      {ops::Op::GeluTanh, FlopRule::Output, 9},
      // max, subtract, exp, sum, divide.
      {ops::Op::Softmax, FlopRule::Output, 5},
      {ops::Op::LogSoftmax, FlopRule::Output, 5},
      // mean, centre, square, variance, scale by 1/std, affine mul and add.
      {ops::Op::LayerNorm, FlopRule::Input, 8},
      {ops::Op::AddLayerNorm, FlopRule::Input, 9},
      {ops::Op::ReduceSum, FlopRule::Input, 1},
      {ops::Op::SoftmaxCrossEntropy, FlopRule::Input, 6},
      {ops::Op::SoftmaxCrossEntropyAndGrad, FlopRule::Input, 10},
      {ops::Op::GeluGrad, FlopRule::Output, 8},
      {ops::Op::GeluTanhGrad, FlopRule::Output, 14},
      {ops::Op::SoftmaxGrad, FlopRule::Output, 4},
      {ops::Op::BatchNormGrad, FlopRule::Input, 8},
      {ops::Op::AdamW, FlopRule::Input, 12},
      {ops::Op::SGD, FlopRule::Input, 4},
      {ops::Op::Transpose, FlopRule::None, 0},
      {ops::Op::Reshape, FlopRule::None, 0},
  };
  for (const Pin &pin : pins) {
    const ops::OpRecord &r = ops::record(pin.op);
    EXPECT_EQ(r.flops.base, pin.base) << r.mnemonic;
    EXPECT_EQ(r.flops.perElement, pin.perElement) << r.mnemonic;
  }
}

/// torch.autocast's lists (CUDA autocast op reference): GEMMs and
/// convolutions in 16-bit, softmax, norms, losses, reductions, exp/log/pow
/// in f32. Pinned so a changed Precision column fails here, not only in a
/// model's drift.
TEST(OpRecords, PrecisionFollowsAutocast) {
  for (ops::Op op : {ops::Op::MatMul, ops::Op::Gemm, ops::Op::Conv,
                     ops::Op::ConvTranspose, ops::Op::Attention})
    EXPECT_EQ(ops::record(op).precision, ops::Precision::Low)
        << ops::record(op).mnemonic;
  for (ops::Op op :
       {ops::Op::Softmax, ops::Op::LogSoftmax, ops::Op::LayerNorm,
        ops::Op::BatchNorm, ops::Op::SoftmaxCrossEntropy, ops::Op::NllLoss,
        ops::Op::ReduceSum, ops::Op::ReduceMean, ops::Op::Exp, ops::Op::Log,
        ops::Op::Pow, ops::Op::Reciprocal})
    EXPECT_EQ(ops::record(op).precision, ops::Precision::Full)
        << ops::record(op).mnemonic;
  for (ops::Op op :
       {ops::Op::Add, ops::Op::Mul, ops::Op::Where, ops::Op::Concat})
    EXPECT_EQ(ops::record(op).precision, ops::Precision::Promote)
        << ops::record(op).mnemonic;
}
