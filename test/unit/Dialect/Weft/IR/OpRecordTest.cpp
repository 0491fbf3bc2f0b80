//===- OpRecordTest.cpp - every dialect op has its record, and back -------===//
//
// The op records (runtime/include/weft/ops/Ops.def, which weft-tblgen
// writes from the .td files) against the dialect the compiler registers,
// so a checked-in table that the build did not regenerate fails here too: an op added to a .td file without a record, a record
// whose mnemonic is not its class's, or a Gradient column that says what the
// op's interfaces do not, fails here naming the op. (Kernels: the spec entry
// and the CPU kernel are test/unit/runtime's, the CUDA kernel the emulator
// test's.)
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/OpRecords.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/ops/OpCheck.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

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

/// An op declares how a tensor-parallel shard passes through it exactly
/// where its record's Split class is Layout (SplitLayoutOpInterface): the
/// tensor-parallel analysis asks the op, and finds a rule for every such op.
TEST_F(OpRecordTest, LayoutOpsDeclareTheirSplit) {
  for (const auto &[mnemonic, name] : dialectOps(ctx)) {
    const ops::OpRecord *r = ops::findOpRecord(mnemonic);
    ASSERT_NE(r, nullptr) << mnemonic;
    EXPECT_EQ(name.hasInterface<weft::SplitLayoutOpInterface>(),
              r->split == ops::Split::Layout)
        << "weft." << mnemonic << ": the record's split class is "
        << ops::name(r->split);
  }
}

/// The per-element FLOP counts as each op's .td description derives them
/// (CostOpInterface's units), pinned for every record that is not Custom:
/// changing one in the record, or adding a record without its pin, fails
/// here (the compiler's cost model and the runtime's spec both read the
/// record, so they cannot disagree with each other, only with this
/// derivation). Custom rules are held by plan emission (getFlops against
/// the spec's count) and CostTest.
TEST(OpRecords, PerElementFlopsAreTheDerivedCounts) {
  using ops::FlopRule;
  using ops::Op;
  struct Pin {
    FlopRule::Base base;
    int64_t perElement;
  };
  const Pin perOutput1{FlopRule::Output, 1}, none{FlopRule::None, 0};
  const std::map<Op, Pin> pins = {
      // One operation per element, transcendental functions included.
      {Op::Sqrt, perOutput1},
      {Op::Reciprocal, perOutput1},
      {Op::Neg, perOutput1},
      {Op::Exp, perOutput1},
      {Op::Log, perOutput1},
      {Op::Erf, perOutput1},
      {Op::Tanh, perOutput1},
      {Op::Relu, perOutput1},
      {Op::Sigmoid, perOutput1},
      {Op::Add, perOutput1},
      {Op::Sub, perOutput1},
      {Op::Mul, perOutput1},
      {Op::Div, perOutput1},
      {Op::Pow, perOutput1},
      {Op::Equal, perOutput1},
      {Op::Where, perOutput1},
      {Op::Clip, perOutput1},
      {Op::Cast, perOutput1},
      {Op::ReluGrad, perOutput1}, // a select on the sign
      // erf form: the chain's div, erf, add, mul, mul.
      {Op::Gelu, {FlopRule::Output, 5}},
      // tanh form: x^3, two scalings, add, tanh, add, two products.
      {Op::GeluTanh, {FlopRule::Output, 9}},
      // max, subtract, exp, sum, divide (log: a log for the divide).
      {Op::Softmax, {FlopRule::Output, 5}},
      {Op::LogSoftmax, {FlopRule::Output, 5}},
      // mean, centre, square, variance, scale by 1/std, affine mul and add;
      // the residual add before it.
      {Op::LayerNorm, {FlopRule::Input, 8}},
      {Op::AddLayerNorm, {FlopRule::Input, 9}},
      // One add or compare per input element.
      {Op::ReduceSum, {FlopRule::Input, 1}},
      {Op::ReduceMean, {FlopRule::Input, 1}},
      {Op::ReduceMax, {FlopRule::Input, 1}},
      {Op::NllLossGrad, {FlopRule::Input, 1}},
      // log-softmax's 5 and the pick of the label's.
      {Op::SoftmaxCrossEntropy, {FlopRule::Input, 6}},
      // ... and its gradient's softmax - one-hot, scaled: 4 more.
      {Op::SoftmaxCrossEntropyAndGrad, {FlopRule::Input, 10}},
      // The derivative's density, product and sum terms.
      {Op::GeluGrad, {FlopRule::Output, 8}},
      {Op::GeluTanhGrad, {FlopRule::Output, 14}},
      // A compare (clip: two) and a select (dropout: a mask and a scale).
      {Op::ClipGrad, {FlopRule::Output, 2}},
      {Op::DropoutGrad, {FlopRule::Output, 2}},
      // dy*y, its row sum, subtract, multiply (log: exp for y).
      {Op::SoftmaxGrad, {FlopRule::Output, 4}},
      {Op::LogSoftmaxGrad, {FlopRule::Output, 4}},
      {Op::BatchNormGrad, {FlopRule::Input, 8}},
      // Moments, bias corrections, the update and its weight decay.
      {Op::AdamW, {FlopRule::Input, 12}},
      {Op::SGD, {FlopRule::Input, 4}},
      // Megatron's vocab-parallel cross-entropy: max/exp/sum per score,
      // the loss's picks, the gradient's softmax - one-hot.
      {Op::VocabParallelCrossEntropyStats, {FlopRule::Input, 3}},
      {Op::VocabParallelCrossEntropy, {FlopRule::Input, 2}},
      {Op::VocabParallelCrossEntropyGrad, {FlopRule::Input, 3}},
      // Data movement, views, constants and communication: 0 FLOPs.
      {Op::Constant, none},
      {Op::Trilu, none},
      {Op::Reshape, none},
      {Op::Transpose, none},
      {Op::Expand, none},
      {Op::Concat, none},
      {Op::Split, none},
      {Op::Slice, none},
      {Op::Gather, none},
      {Op::Pad, none},
      {Op::Resize, none},
      {Op::Assign, none},
      {Op::CopyToTensorParallel, none},
      {Op::VocabParallelGather, none},
      {Op::WaitCollective, none},
      {Op::ISend, none},
      {Op::WaitSend, none},
      {Op::IRecv, none},
      {Op::WaitRecv, none},
  };
  for (const ops::OpRecord &r : ops::opRecords()) {
    auto it = pins.find(r.op);
    if (r.flops.isCustom()) {
      EXPECT_EQ(it, pins.end()) << r.mnemonic << " is Custom, and pinned";
      continue;
    }
    ASSERT_NE(it, pins.end()) << r.mnemonic << ": pin its FLOPs here";
    EXPECT_EQ(r.flops.base, it->second.base) << r.mnemonic;
    EXPECT_EQ(r.flops.perElement, it->second.perElement) << r.mnemonic;
  }
}

/// The in-place pairs of the kernel specification, pinned: the memory plan
/// aliases exactly these (inPlaceOperand reads them) and weft-run's
/// placement check holds them, so changing one in the spec changes both
/// and fails here. (output, input, required).
TEST(OpRecords, InPlacePairsArePinned) {
  using ops::Op;
  using Pairs = std::vector<std::tuple<int, int, bool>>;
  const std::map<Op, Pairs> pins = {
      // The optimizer steps: parameter, then its state past the gradient.
      {Op::AdamW, {{0, 0, true}, {1, 2, true}, {2, 3, true}, {3, 4, true}}},
      {Op::SGD, {{0, 0, true}, {1, 2, true}, {2, 3, true}}},
      {Op::UpdateLossScale, {{0, 0, true}}},
      {Op::Assign, {{0, 0, true}}},
      // Gradients accumulated into their running sums.
      {Op::WgradBias, {{0, 2, true}, {1, 3, true}}},
      {Op::GatherGrad, {{0, 2, true}}},
      {Op::VocabParallelGatherGrad, {{0, 2, true}}},
      // May run in place: running statistics, the fused loss's gradient.
      {Op::BatchNorm, {{1, 3, false}, {2, 4, false}}},
      {Op::SoftmaxCrossEntropyAndGrad, {{2, 0, false}}},
  };
  for (const ops::OpRecord &r : ops::opRecords()) {
    Pairs pairs;
    for (int o = 0; o < 8; ++o)
      if (std::optional<ops::InPlacePair> p = ops::inPlaceInput(r.op, o))
        pairs.emplace_back(p->output, p->input, p->required);
    auto it = pins.find(r.op);
    EXPECT_EQ(pairs, it == pins.end() ? Pairs{} : it->second) << r.mnemonic;
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
