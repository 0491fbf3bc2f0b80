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
