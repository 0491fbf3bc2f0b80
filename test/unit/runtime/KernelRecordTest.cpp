//===- KernelRecordTest.cpp - the kernel table against the op records -----===//
//
// Every kernel op's record (its .td definition, as weft-tblgen writes it to
// weft/ops/Ops.def) has its specification entry and a CPU kernel, and the
// facts the record states as data (each input's dtypes, attribute defaults,
// per-element FLOPs, in-place pairs, precision) are pinned, so changing one
// in a .td file fails here naming the op: adding an op means pinning its
// facts in this one file.
//
//===----------------------------------------------------------------------===//

#include "weft/ops/OpCheck.h"
#include "weft/runtime/KernelSpec.h"

#include "../../../runtime/kernels/Fused.h"
#include "../../../runtime/kernels/Kernel.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

using namespace weft::rt;
namespace ops = weft::ops;

/// Every op record whose Lowering is Kernel has one specification entry and
/// one CPU kernel (in the table or fused, run as its parts, not both), and
/// every entry and kernel belongs to such a record: a kernel missing from a
/// backend fails here naming the op.
TEST(OpRecords, EveryKernelOpHasASpecEntryAndACpuKernel) {
  size_t kernels = 0;
  for (const ops::OpRecord &r : ops::opRecords()) {
    std::string name(r.mnemonic);
    const KernelSpec *spec = findKernelSpec(r.op);
    bool cpu = kernelTable().find(r.op), fused = fusedKernels().find(r.op);
    EXPECT_FALSE(cpu && fused) << name << ": a kernel and a fused kernel";
    if (!r.isKernel()) {
      EXPECT_EQ(spec, nullptr) << name << " is not a kernel but has an entry";
      EXPECT_FALSE(cpu || fused) << name << " is not a kernel but has one";
      EXPECT_EQ(r.backends, ops::Backends::NoKernel) << name;
      continue;
    }
    ++kernels;
    ASSERT_NE(spec, nullptr) << name << " has no specification entry";
    EXPECT_EQ(spec, findKernelSpec(name)) << name;
    EXPECT_NE(std::string(spec->source), "") << name;
    EXPECT_NE(r.backends, ops::Backends::NoKernel) << name;
    EXPECT_TRUE(cpu || fused) << name << " has no CPU kernel";
    // The FLOP rule lives in one place: the record, or the entry (Custom).
    EXPECT_EQ(spec->flops != nullptr, r.flops.isCustom())
        << name << ": FLOPs counted by "
        << (spec->flops ? "the spec entry" : "the record")
        << ", the record says " << (r.flops.isCustom() ? "Custom" : "not");
  }
  // One entry per kernel op: none twice, none for another op.
  EXPECT_EQ(kernelSpecs().size(), kernels);
  EXPECT_EQ(findKernelSpec("gelu_fast"), nullptr);
  EXPECT_EQ(ops::findOpRecord("gelu_fast"), nullptr);
  EXPECT_EQ(ops::findOpRecord("layer_norm")->op, ops::Op::LayerNorm);
}

/// Each kernel's input dtypes (its operands' Weft_TensorOf constraints, as
/// KernelSpec::dtypes: one set per input, the last for the rest), pinned:
/// the dialect's verifier and weft-run's check enforce them and the docs
/// print them, so changing one operand's constraint, or adding a kernel
/// without its pin, fails here. Relations between inputs (alike, f32 beside
/// 16-bit) are the rules'.
TEST(KernelSpec, InputDTypesArePinned) {
  const std::map<std::string, std::vector<Op>> pins = {
      // Arithmetic in floats (16-bit widened to f32): the inputs are floats,
      // tied to input 0 by the rule (alike, or f32 beside 16-bit).
      {"float",
       {Op::Sqrt,
        Op::Reciprocal,
        Op::Neg,
        Op::Exp,
        Op::Log,
        Op::Erf,
        Op::Tanh,
        Op::Relu,
        Op::Sigmoid,
        Op::Sin,
        Op::Cos,
        Op::IsNaN,
        Op::IsInf,
        Op::Gelu,
        Op::GeluTanh,
        Op::Glu,
        Op::GluGrad,
        Op::Rotary,
        Op::RotaryGrad,
        Op::Softmax,
        Op::LogSoftmax,
        Op::Dropout,
        Op::AvgPool,
        Op::FoundInf,
        Op::Attention,
        Op::AttentionGrad,
        Op::LayerNormGrad,
        Op::WgradBias,
        Op::ConvWeightGrad,
        Op::BatchNormGrad,
        Op::MaxPoolGrad,
        Op::AvgPoolGrad,
        Op::ResizeGrad,
        Op::AdamW,
        Op::SGD,
        Op::LayerNorm,
        Op::AddLayerNorm,
        Op::BatchNorm,
        Op::RmsNorm,
        Op::RmsNormGrad,
        Op::Conv,
        Op::ConvTranspose,
        Op::MatMul,
        Op::Gemm,
        Op::GemmGeluTanh,
        Op::GemmGeluTanhGrad,
        Op::ReluGrad,
        Op::GeluGrad,
        Op::GeluTanhGrad,
        Op::ClipGrad,
        Op::SoftmaxGrad,
        Op::LogSoftmaxGrad}},
      {"float, bool", {Op::DropoutGrad}},
      {"float, bool, float", {Op::ScaleMaskSoftmax}},
      {"float, float, bool", {Op::ScaleMaskSoftmaxGrad}},
      // Scores and labels (indices), then weights, sums, gradients.
      {"float, index", {Op::VocabParallelGather, Op::GatherElementsGrad}},
      {"float, index, float",
       {Op::GatherGrad, Op::SoftmaxCrossEntropyGrad, Op::NllLossGrad,
        Op::SoftmaxCrossEntropy, Op::SoftmaxCrossEntropyAndGrad, Op::NllLoss,
        Op::VocabParallelGatherGrad, Op::VocabParallelCrossEntropyGrad}},
      {"float, float, index", {Op::VocabParallelCrossEntropyStats}},
      {"float, float, float, index", {Op::VocabParallelCrossEntropy}},
      // Floats and integers (not bool).
      {"numeric",
       {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Max, Op::Min, Op::Clip,
        Op::Compare, Op::CumSum, Op::MaxPool, Op::ReduceSum, Op::ReduceMean,
        Op::ReduceMax}},
      // Logic on masks.
      {"bool", {Op::Not, Op::Logical}},
      // Data movement and comparison: any dtype.
      {"any",
       {Op::Equal, Op::Cast, Op::Assign, Op::Transpose, Op::Expand, Op::Concat,
        Op::Split, Op::Slice, Op::Pad, Op::Trilu, Op::Resize}},
      {"any, index", {Op::Gather, Op::GatherElements}},
      {"bool, any", {Op::Where}},
      {"f32", {Op::UpdateLossScale}},
  };
  std::map<Op, std::string> pinned;
  for (const auto &[sets, kernels] : pins)
    for (Op op : kernels)
      EXPECT_TRUE(pinned.emplace(op, sets).second)
          << ops::record(op).mnemonic << " pinned twice";
  for (const KernelSpec &spec : kernelSpecs()) {
    std::string sets;
    for (DTypeSet d : spec.dtypes)
      sets += (sets.empty() ? "" : ", ") + d.name();
    auto it = pinned.find(spec.op);
    ASSERT_NE(it, pinned.end()) << spec.name() << ": pin its dtypes here";
    EXPECT_EQ(sets, it->second) << spec.name();
  }
  EXPECT_EQ(pinned.size(), kernelSpecs().size());
}

/// A kernel's input counts and plan attributes are its ODS signature: an
/// attribute the plan omits takes the op's ODS default when it has one
/// (DefaultValuedAttr), and is refused when it is required.
TEST(OpRecords, PlanAttributesTakeTheirOdsDefaults) {
  const KernelSpec &layerNorm = *findKernelSpec(ops::Op::LayerNorm);
  EXPECT_EQ(layerNorm.minInputs, 2);
  EXPECT_EQ(layerNorm.maxInputs, 3);
  KernelAttrs attrs = decodeKernelAttrs(layerNorm, {{"axis", 1}});
  EXPECT_EQ(attrs.i("axis"), 1);
  EXPECT_DOUBLE_EQ(attrs.f("epsilon"), 1e-5);
  EXPECT_DOUBLE_EQ(
      decodeKernelAttrs(layerNorm, {{"axis", 1}, {"epsilon", 0.25}})
          .f("epsilon"),
      0.25);
  EXPECT_THROW(
      {
        try {
          decodeKernelAttrs(layerNorm, {{"epsilon", 0.25}});
        } catch (const Error &e) {
          EXPECT_STREQ(e.what(), "missing attribute 'axis'");
          throw;
        }
      },
      Error);
  // An optional attribute without a default stays absent.
  KernelAttrs loss = decodeKernelAttrs(
      *findKernelSpec(ops::Op::SoftmaxCrossEntropy), nlohmann::json::object());
  EXPECT_EQ(loss.s("reduction"), "mean");
  EXPECT_FALSE(loss.has("ignore_index"));
  // Plan-only attributes (planAttrs) beside the ODS ones; the vocab ops'
  // mesh axes (compilerAttrs) are not plan attributes.
  const KernelSpec &gatherGrad =
      *findKernelSpec(ops::Op::VocabParallelGatherGrad);
  std::vector<std::string> names;
  for (const AttrSpec &a : gatherGrad.attrs)
    names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"start", "rows"}));
  EXPECT_EQ(findKernelSpec(ops::Op::Concat)->minInputs, 1);
  EXPECT_EQ(findKernelSpec(ops::Op::Concat)->maxInputs, kVariadic);
}

/// The defaults the plan fills in are the ONNX operators' (opset 17
/// sections) or, for weft's own ops, torch's: pinned, so changing one in a
/// .td fails here naming it.
TEST(OpRecords, AttributeDefaultsArePinned) {
  const std::map<std::pair<std::string, std::string>, KernelAttrs::Value>
      pinned = {
          {{"layer_norm", "epsilon"}, 1e-5}, // LayerNormalization-17
          {{"add_layer_norm", "epsilon"}, 1e-5},
          // RMSNormalization-23's.
          {{"rms_norm", "epsilon"}, 1e-5},
          {{"batch_norm", "epsilon"}, 1e-5}, // BatchNormalization-15
          {{"batch_norm", "momentum"}, 0.9},
          {{"batch_norm", "training"}, false},
          {{"batch_norm", "unbiased_running_var"}, false},
          {{"gemm", "alpha"}, 1.0}, // Gemm-13
          {{"gemm", "beta"}, 1.0},
          {{"gemm", "transA"}, false},
          {{"gemm", "transB"}, false},
          {{"gemm_gelu_tanh", "alpha"}, 1.0},
          {{"gemm_gelu_tanh", "beta"}, 1.0},
          {{"gemm_gelu_tanh", "transA"}, false},
          {{"gemm_gelu_tanh", "transB"}, false},
          {{"gemm_gelu_tanh_grad", "alpha"}, 1.0},
          {{"gemm_gelu_tanh_grad", "transA"}, false},
          {{"gemm_gelu_tanh_grad", "transB"}, false},
          {{"matmul", "transA"}, false},
          {{"matmul", "transB"}, false},
          {{"conv", "group"}, int64_t{1}}, // Conv-11
          {{"conv_transpose", "group"}, int64_t{1}},
          {{"max_pool", "ceil_mode"}, false}, // MaxPool-12
          {{"avg_pool", "ceil_mode"}, false}, // AveragePool-11
          {{"avg_pool", "count_include_pad"}, false},
          {{"dropout", "ratio"}, 0.5}, // Dropout-13
          {{"dropout", "training"}, false},
          {{"pad", "value"}, 0.0},      // Pad-13, constant mode
          {{"trilu", "k"}, int64_t{0}}, // Trilu-14
          {{"cast", "nearest_even"}, false},
          {{"cumsum", "exclusive"}, false}, // CumSum-14
          {{"cumsum", "reverse"}, false},
          {{"is_inf", "detect_negative"}, true}, // IsInf-20
          {{"is_inf", "detect_positive"}, true},
          {{"wgrad_bias", "transposed"}, false},
          {{"attention", "causal"}, false},
          // The half-split layout (Hugging Face's rotate_half).
          {{"rotary", "interleaved"}, false},
          {{"rotary_grad", "interleaved"}, false},
          {{"attention_grad", "causal"}, false},
          {{"softmax_cross_entropy", "log_sum_exp"}, false},
          {{"softmax_cross_entropy", "reduction"}, std::string("mean")},
          {{"softmax_cross_entropy_and_grad", "reduction"},
           std::string("mean")},
          {{"softmax_cross_entropy_grad", "reduction"}, std::string("mean")},
          {{"nll_loss", "reduction"}, std::string("mean")},
          {{"nll_loss_grad", "reduction"}, std::string("mean")},
      };
  size_t defaults = 0;
  for (const KernelSpec &spec : kernelSpecs())
    for (const AttrSpec &a : spec.attrs) {
      if (!a.byDefault)
        continue;
      ++defaults;
      auto it = pinned.find({std::string(spec.name()), a.name});
      ASSERT_NE(it, pinned.end())
          << spec.name() << "'s " << a.name << " has a default; pin it here";
      EXPECT_EQ(*a.byDefault, it->second) << spec.name() << "'s " << a.name;
    }
  EXPECT_EQ(defaults, pinned.size());
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
      {Op::Max, perOutput1}, // a comparison and a select
      {Op::Min, perOutput1},
      {Op::Equal, perOutput1},
      {Op::Compare, perOutput1},
      {Op::CumSum, perOutput1},
      {Op::GatherElementsGrad, {FlopRule::Input, 1}}, // a sum per read
      {Op::Logical, perOutput1},
      {Op::Not, perOutput1},
      {Op::IsNaN, perOutput1},
      {Op::IsInf, perOutput1},
      {Op::Sin, perOutput1},
      {Op::Cos, perOutput1},
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
      {Op::ScaleMaskSoftmax, {FlopRule::Output, 7}},
      {Op::ScaleMaskSoftmaxGrad, {FlopRule::Output, 6}},
      // square and sum, scale by 1/rms, affine mul.
      {Op::RmsNorm, {FlopRule::Input, 4}},
      // x cos, rotate(x) sin, their sum (the backward: dy cos, dy sin, the
      // difference).
      {Op::Rotary, {FlopRule::Input, 3}},
      {Op::RotaryGrad, {FlopRule::Input, 3}},
      // g = dy scale, xhat, the row's g xhat sum, dx's three, dscale's two.
      {Op::RmsNormGrad, {FlopRule::Input, 9}},
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
      {Op::GatherElements, none},
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

/// The in-place pairs of the record (a .td definition's `inPlace`), pinned:
/// the memory plan aliases exactly these (inPlaceOperand reads them) and
/// weft-run's placement check holds them, so changing one in the record
/// changes both and fails here. (output, input, required).
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
      // A micro-batch's sum added into the running sum (weft.accumulate).
      {Op::Add, {{0, 0, false}}},
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
  for (ops::Op op : {ops::Op::Softmax, ops::Op::LogSoftmax, ops::Op::LayerNorm,
                     ops::Op::RmsNorm, ops::Op::Rotary, ops::Op::BatchNorm,
                     ops::Op::SoftmaxCrossEntropy, ops::Op::NllLoss,
                     ops::Op::ReduceSum, ops::Op::ReduceMean, ops::Op::Exp,
                     ops::Op::Log, ops::Op::Pow, ops::Op::Reciprocal})
    EXPECT_EQ(ops::record(op).precision, ops::Precision::Full)
        << ops::record(op).mnemonic;
  for (ops::Op op : {ops::Op::Add, ops::Op::Mul, ops::Op::Max, ops::Op::Min,
                     ops::Op::Where, ops::Op::Concat})
    EXPECT_EQ(ops::record(op).precision, ops::Precision::Promote)
        << ops::record(op).mnemonic;
}
