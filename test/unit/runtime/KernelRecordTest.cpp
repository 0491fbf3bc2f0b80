//===- KernelRecordTest.cpp - the kernel table against the op records -----===//
//
// Every kernel op's record (weft/ops/Ops.def) has its specification entry
// and a CPU kernel, and the facts the entries state as data (each input's
// dtypes) are pinned, so changing one fails here naming the kernel.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/KernelSpec.h"

#include "../../../runtime/kernels/Fused.h"
#include "../../../runtime/kernels/Kernel.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

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

/// Each kernel's input dtypes (KernelSpec::dtypes, one set per input, the
/// last for the rest), pinned: the check enforces them and the docs print
/// them, so changing one list, or adding a kernel without its pin, fails
/// here. Relations between inputs (alike, f32 beside 16-bit) are the rules'.
TEST(KernelSpec, InputDTypesArePinned) {
  const std::map<std::string, std::vector<Op>> pins = {
      // Arithmetic in floats (16-bit widened to f32).
      {"float",
       {Op::Sqrt, Op::Reciprocal, Op::Neg, Op::Exp, Op::Log, Op::Erf, Op::Tanh,
        Op::Relu, Op::Sigmoid, Op::Gelu, Op::GeluTanh, Op::Softmax,
        Op::LogSoftmax, Op::Dropout, Op::AvgPool, Op::FoundInf}},
      // A float input 0; the others tied to it by the rule.
      {"float, any", {Op::Attention,
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
      // Scores and labels (indices), then weights, sums, gradients.
      {"float, index", {Op::VocabParallelGather}},
      {"float, index, any",
       {Op::GatherGrad, Op::SoftmaxCrossEntropyGrad, Op::NllLossGrad,
        Op::SoftmaxCrossEntropy, Op::SoftmaxCrossEntropyAndGrad, Op::NllLoss,
        Op::VocabParallelGatherGrad, Op::VocabParallelCrossEntropyGrad}},
      {"float, any, index", {Op::VocabParallelCrossEntropyStats}},
      {"float, any, any, index", {Op::VocabParallelCrossEntropy}},
      // Floats and integers (not bool).
      {"numeric",
       {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Clip, Op::MaxPool,
        Op::ReduceSum, Op::ReduceMean, Op::ReduceMax}},
      // Data movement and comparison: any dtype.
      {"any",
       {Op::Equal, Op::Cast, Op::Assign, Op::Transpose, Op::Expand, Op::Concat,
        Op::Split, Op::Slice, Op::Pad, Op::Trilu, Op::Resize}},
      {"any, index", {Op::Gather}},
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
          {{"wgrad_bias", "transposed"}, false},
          {{"attention", "causal"}, false},
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
