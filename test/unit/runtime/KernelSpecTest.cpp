//===- KernelSpecTest.cpp - the kernel specification table ----------------===//
//
// The crash sites a 400-mutant plan fuzz found (issue 12): each mutated
// instruction must be refused by checkKernel with a message naming what is
// wrong, before any kernel runs. And the costs the table gives.
//
//===----------------------------------------------------------------------===//

#include "KernelSpecCheck.h"

using namespace weft::rt;
using namespace weft::rt::spec_check;
using json = nlohmann::json;
namespace ops = weft::ops;

namespace {

const json kGemm = {
    {"alpha", 1.0}, {"beta", 1.0}, {"transA", false}, {"transB", false}};
const json kAdamW = {{"lr", 1e-3},
                     {"beta1", 0.9},
                     {"beta2", 0.999},
                     {"eps", 1e-8},
                     {"weight_decay", 0.01}};

} // namespace

/// The check refuses a dtype outside an input's set before the rule runs,
/// naming the input and the set.
TEST(KernelSpec, RefusesADTypeOutsideTheInputsSet) {
  OperandPlacement i32 = {{DType::I32, {4}}, 0};
  EXPECT_EQ(errorOf("exp", {i32}, {{{DType::I32, {4}}, 64}}, json::object()),
            "input 0 is i32, expected f32, f64, f16 or bf16");
  OperandPlacement labels = {{DType::F32, {2}}, 64};
  EXPECT_EQ(errorOf("nll_loss", {f32({2, 3}, 0), labels}, {f32({}, 128)},
                    {{"reduction", "mean"}}),
            "input 1 is f32, expected i32 or i64 indices");
  OperandPlacement flag = {{DType::Bool, {4}}, 0};
  EXPECT_EQ(
      errorOf("add", {flag, flag}, {{{DType::Bool, {4}}, 64}}, json::object()),
      "input 0 is bool, expected a float or integer dtype");
}

TEST(KernelSpec, AcceptsWhatTheCompilerEmits) {
  EXPECT_EQ(errorOf("gemm", {f32({2, 3}, 0), f32({3, 4}, 64), f32({4}, 128)},
                    {f32({2, 4}, 256)}, kGemm),
            "");
  EXPECT_EQ(errorOf("transpose", {f32({2, 3, 4}, 0)}, {f32({4, 2, 3}, 128)},
                    {{"perm", {2, 0, 1}}}),
            "");
  // dY B^T of attention's heads: [2, 3, 5] x [2, 4, 5]^T.
  EXPECT_EQ(errorOf("matmul", {f32({2, 3, 5}, 0), f32({2, 4, 5}, 128)},
                    {f32({2, 3, 4}, 512)},
                    {{"transA", false}, {"transB", true}}),
            "");
  // AdamW updates param, exp_avg and exp_avg_sq in place.
  EXPECT_EQ(errorOf("adamw",
                    {f32({8}, 0), f32({8}, 32), f32({8}, 64), f32({8}, 96)},
                    {f32({8}, 0), f32({8}, 64), f32({8}, 96)}, kAdamW),
            "");
}

TEST(KernelSpec, RefusesTheMutantsThatCrashedWeftRun) {
  struct Case {
    std::string error, expected;
  };
  std::vector<Case> cases = {
      // transpose with no inputs / a perm out of range.
      {errorOf("transpose", {}, {f32({3, 2}, 0)}, {{"perm", {1, 0}}}),
       "takes 1 input(s), the instruction has 0"},
      {errorOf("transpose", {f32({2, 3}, 0)}, {f32({3, 2}, 64)},
               {{"perm", {1, 7}}}),
       "attribute 'perm' is not a permutation of [0, 2)"},
      // gemm with its operands swapped: [3x4] x [2x3] does not contract.
      {errorOf("gemm", {f32({3, 4}, 0), f32({2, 3}, 64)}, {f32({2, 4}, 128)},
               kGemm),
       "contraction dims differ: 4 vs 2"},
      // matmul reading a vector transposed (weft.matmul's transA).
      {errorOf("matmul", {f32({4}, 0), f32({4, 5}, 64)}, {f32({5}, 192)},
               {{"transA", true}}),
       "transA needs an operand of rank >= 2, got [4] f32"},
      // gemm writing a buffer of the wrong shape.
      {errorOf("gemm", {f32({2, 3}, 0), f32({3, 4}, 64)}, {f32({4, 2}, 128)},
               kGemm),
       "output 0 is [4x2] f32, gemm writes [2x4] f32"},
      // adamw with exp_avg and the gradient swapped: not in place.
      {errorOf("adamw", {f32({8}, 0), f32({8}, 64), f32({8}, 32), f32({8}, 96)},
               {f32({8}, 0), f32({8}, 64), f32({8}, 96)}, kAdamW),
       "output 1 must update input 2 in place"},
      // layer norm writing statistics of the wrong shape (past its buffer).
      {errorOf("layer_norm", {f32({4, 8}, 0), f32({8}, 128)},
               {f32({4, 8}, 256), f32({4}, 384), f32({4, 1}, 400)},
               {{"axis", 1}, {"epsilon", 1e-5}}),
       "output 1 is [4] f32, layer_norm writes [4x1] f32"},
      // An output overlapping an input of a kernel that is not in place.
      {errorOf("relu", {f32({8}, 0)}, {f32({8}, 16)}, json::object()),
       "output 0 overlaps input 0 in the arena"},
      {errorOf("split", {f32({4}, 0)}, {f32({2}, 64), f32({2}, 68)},
               {{"axis", 0}, {"sizes", {2, 2}}}),
       "outputs 0 and 1 overlap in the arena"},
      // Attributes: missing, unknown, of the wrong kind, out of range.
      {errorOf("softmax", {f32({2, 3}, 0)}, {f32({2, 3}, 64)}, json::object()),
       "missing attribute 'axis'"},
      {errorOf("softmax", {f32({2, 3}, 0)}, {f32({2, 3}, 64)},
               {{"axis", 1}, {"axes", 1}}),
       "unknown attribute 'axes'"},
      {errorOf("softmax", {f32({2, 3}, 0)}, {f32({2, 3}, 64)}, {{"axis", "1"}}),
       "attribute 'axis' must be an integer, got \"1\""},
      {errorOf("softmax", {f32({2, 3}, 0)}, {f32({2, 3}, 64)}, {{"axis", 2}}),
       "attribute 'axis' is 2, outside [0, 2)"},
      {errorOf("dropout", {f32({4}, 0)},
               {f32({4}, 64), {{DType::Bool, {4}}, 128}},
               {{"ratio", 1.0}, {"training", true}}),
       "attribute 'ratio' is 1.000000, expected [0, 1)"},
      // Dtypes the kernels do not implement, and the index dtype of gather.
      {errorOf("exp", {{{DType::I64, {4}}, 0}}, {{{DType::I64, {4}}, 64}},
               json::object()),
       "input 0 is i64, expected f32, f64, f16 or bf16"},
      {errorOf("gather", {f32({10, 4}, 0), f32({3}, 256)}, {f32({3, 4}, 512)},
               {{"axis", 0}}),
       "expected i32 or i64 indices"},
      // Hostile sizes: attribute arithmetic that would overflow int64.
      {errorOf("pad", {f32({4}, 0)}, {f32({4}, 64)},
               {{"pads", {INT64_MAX, 1}}, {"value", 0.0}}),
       "size arithmetic overflows int64"},
      {errorOf("conv", {f32({1, 1, 4, 4}, 0), f32({1, 1, 2, 2}, 128)},
               {f32({1, 1, 3, 3}, 256)},
               {{"strides", {1, 1}},
                {"pads", {0, 0, 0, 0}},
                {"dilations", {INT64_MAX, 1}},
                {"group", 1}}),
       "size arithmetic overflows int64"},
      {errorOf("softmax_cross_entropy",
               {f32({0, 5}, 0), {{DType::I64, {0}}, 64}},
               {f32({}, 128), f32({0, 5}, 192)}, {{"reduction", "mean"}}),
       "hold no sample or no class"},
  };
  for (const Case &c : cases)
    EXPECT_NE(c.error.find(c.expected), std::string::npos)
        << "expected '" << c.expected << "', got '" << c.error << "'";
}

TEST(KernelSpec, CostsFollowTheCompilersConventions) {
  // [2x3] x [3x4]: 2 * 8 outputs * 3 multiply-adds; reads A and B, writes C.
  KernelCost mm = costOf("matmul", {f32({2, 3}, 0), f32({3, 4}, 64)},
                         {f32({2, 4}, 128)}, json::object());
  EXPECT_EQ(mm.flops, 48);
  EXPECT_EQ(mm.bytesRead, (6 + 12) * 4);
  EXPECT_EQ(mm.bytesWritten, 8 * 4);
  // gemm with C adds 1 FLOP per output at beta 1 (the add), 2 otherwise
  // (beta * C + alpha * AB).
  EXPECT_EQ(costOf("gemm", {f32({2, 3}, 0), f32({3, 4}, 64), f32({4}, 128)},
                   {f32({2, 4}, 256)}, kGemm)
                .flops,
            48 + 8);
  json scaled = kGemm;
  scaled["beta"] = 2.0;
  EXPECT_EQ(costOf("gemm", {f32({2, 3}, 0), f32({3, 4}, 64), f32({4}, 128)},
                   {f32({2, 4}, 256)}, scaled)
                .flops,
            48 + 16);
  // conv 3x3, 2 -> 4 channels, 5x5 -> 3x3 outputs: 2 * 36 * 2 * 9 + bias.
  EXPECT_EQ(
      costOf("conv",
             {f32({1, 2, 5, 5}, 0), f32({4, 2, 3, 3}, 256), f32({4}, 1024)},
             {f32({1, 4, 3, 3}, 2048)},
             {{"strides", {1, 1}},
              {"pads", {0, 0, 0, 0}},
              {"dilations", {1, 1}},
              {"group", 1}})
          .flops,
      2 * 36 * 18 + 36);
  // gather reads the gathered rows and the indices, not the table.
  KernelCost g =
      costOf("gather", {f32({1000, 4}, 0), {{DType::I64, {3}}, 16000}},
             {f32({3, 4}, 16064)}, {{"axis", 0}});
  EXPECT_EQ(g.bytesRead, 12 * 4 + 3 * 8);
  EXPECT_EQ(costOf("adamw",
                   {f32({8}, 0), f32({8}, 32), f32({8}, 64), f32({8}, 96)},
                   {f32({8}, 0), f32({8}, 64), f32({8}, 96)}, kAdamW)
                .flops,
            12 * 8);
}

TEST(KernelAttrs, DecodedOnceAndTyped) {
  CheckedKernel k = checkKernel(*findKernelSpec("transpose"), {f32({2, 3}, 0)},
                                {f32({3, 2}, 64)}, {{"perm", {1, 0}}});
  EXPECT_EQ(k.attrs.ints("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_FALSE(k.attrs.has("axis"));
  EXPECT_THROW(k.attrs.i("perm"), Error);
  EXPECT_THROW(k.attrs.i("axis"), Error);
}

TEST(KernelSpec, ChecksATensorParallelDropoutsShard) {
  auto mask = [](std::vector<int64_t> shape, int64_t offset) {
    return OperandPlacement{{DType::Bool, shape}, offset};
  };
  json shard = {{"ratio", 0.1},      {"training", true}, {"shard_dim", 1},
                {"shard_blocks", 1}, {"shard_count", 2}, {"shard_index", 1}};
  EXPECT_EQ(errorOf("dropout", {f32({4, 8}, 0)},
                    {f32({4, 8}, 128), mask({4, 8}, 256)}, shard),
            "");
  json partial = shard;
  partial.erase("shard_index");
  EXPECT_NE(errorOf("dropout", {f32({4, 8}, 0)},
                    {f32({4, 8}, 128), mask({4, 8}, 256)}, partial)
                .find("needs all of shard_dim, shard_blocks, shard_count and "
                      "shard_index, or none"),
            std::string::npos);
  json outside = shard;
  outside["shard_index"] = 2;
  EXPECT_NE(errorOf("dropout", {f32({4, 8}, 0)},
                    {f32({4, 8}, 128), mask({4, 8}, 256)}, outside)
                .find("shard_index 2 do not describe a shard of 8 elements"),
            std::string::npos);
  json dim = shard;
  dim["shard_dim"] = 2;
  EXPECT_NE(errorOf("dropout", {f32({4, 8}, 0)},
                    {f32({4, 8}, 128), mask({4, 8}, 256)}, dim)
                .find("attribute 'shard_dim' is 2, the input has rank 2"),
            std::string::npos);
}

/// layout "bshd" (weft-fold-attention-transpose): q, k, v and the output
/// [B, S, H, D], stats [B, H, Sq], the cost of the same B H pairs; any
/// other layout, or a rank other than 4, is refused naming it.
/// attention's bias: the scores' rank and q's dtype, each dim theirs or 1
/// and the last the keys'; the [.., S, D] layout only.
TEST(KernelSpec, ChecksAnAttentionBias) {
  json attrs = {{"scale", 0.5}};
  std::vector<OperandPlacement> qkv = {
      f32({2, 2, 3, 4}, 0), f32({2, 2, 3, 4}, 512), f32({2, 2, 3, 4}, 1024)};
  std::vector<OperandPlacement> out = {f32({2, 2, 3, 4}, 2048),
                                       f32({2, 2, 3}, 2560)};
  auto with = [&](OperandPlacement bias) {
    std::vector<OperandPlacement> in = qkv;
    in.push_back(bias);
    return in;
  };
  EXPECT_EQ(errorOf("attention", with(f32({2, 1, 1, 3}, 1536)), out, attrs),
            "");
  EXPECT_EQ(errorOf("attention", with(f32({1, 1, 3, 3}, 1536)), out, attrs),
            "");
  EXPECT_NE(errorOf("attention", with(f32({2, 1, 1, 2}, 1536)), out, attrs)
                .find("the bias [2x1x1x2] f32 does not broadcast to the "
                      "scores [2, 2, 3, 3]"),
            std::string::npos);
  EXPECT_NE(errorOf("attention", with(f32({2, 1, 3}, 1536)), out, attrs)
                .find("does not broadcast"),
            std::string::npos);
  OperandPlacement b64{{DType::F64, {2, 1, 1, 3}}, 1536};
  EXPECT_NE(errorOf("attention", with(b64), out, attrs), "");
}

TEST(KernelSpec, ChecksAnAttentionsLayout) {
  json bshd = {{"scale", 0.25}, {"causal", true}, {"layout", "bshd"}};
  // B 2, S 8, H 3, D 16; Dv 4.
  std::vector<OperandPlacement> in = {
      f32({2, 8, 3, 16}, 0), f32({2, 8, 3, 16}, 4096), f32({2, 8, 3, 4}, 8192)};
  EXPECT_EQ(errorOf("attention", in,
                    {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd),
            "");
  // The same attention on [B, H, S, D] costs the same.
  EXPECT_EQ(costOf("attention", in,
                   {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd)
                .flops,
            costOf("attention",
                   {f32({2, 3, 8, 16}, 0), f32({2, 3, 8, 16}, 4096),
                    f32({2, 3, 8, 4}, 8192)},
                   {f32({2, 3, 8, 4}, 16384), f32({2, 3, 8}, 20480)},
                   {{"scale", 0.25}, {"causal", true}})
                .flops);
  EXPECT_NE(errorOf("attention", in,
                    {f32({2, 3, 8, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd)
                .find("output 0 is [2x3x8x4] f32, attention writes "
                      "[2x8x3x4] f32"),
            std::string::npos);
  json other = bshd;
  other["layout"] = "bhsd";
  EXPECT_NE(errorOf("attention", in,
                    {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, other)
                .find("attribute 'layout' is 'bhsd', expected \"bshd\", "
                      "\"bs3hd\""),
            std::string::npos);
  EXPECT_NE(
      errorOf("attention",
              {f32({6, 8, 16}, 0), f32({6, 8, 16}, 4096), f32({6, 8, 4}, 8192)},
              {f32({6, 8, 4}, 16384), f32({6, 8}, 20480)}, bshd)
          .find("layout \"bshd\" takes q, k and v [B, S, H, D]"),
      std::string::npos);
  // k with 2 heads against q's 3: 2 does not divide 3.
  EXPECT_NE(errorOf("attention",
                    {f32({2, 8, 3, 16}, 0), f32({2, 8, 2, 16}, 4096),
                     f32({2, 8, 2, 4}, 8192)},
                    {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd)
                .find("expects q [B, Sq, H, D], k [B, Sk, Hkv, D], v [B, "
                      "Sk, Hkv, Dv], Hkv dividing H"),
            std::string::npos);
  // Multi-query attention: one kv head for q's 3, the cost of the 6 query
  // pairs; k and v with different heads are refused.
  std::vector<OperandPlacement> mqa = {
      f32({2, 8, 3, 16}, 0), f32({2, 8, 1, 16}, 4096), f32({2, 8, 1, 4}, 8192)};
  EXPECT_EQ(errorOf("attention", mqa,
                    {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd),
            "");
  EXPECT_EQ(costOf("attention", mqa,
                   {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd)
                .flops,
            costOf("attention", in,
                   {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd)
                .flops);
  EXPECT_NE(errorOf("attention",
                    {f32({2, 8, 3, 16}, 0), f32({2, 8, 1, 16}, 4096),
                     f32({2, 8, 3, 4}, 8192)},
                    {f32({2, 8, 3, 4}, 16384), f32({2, 3, 8}, 20480)}, bshd)
                .find("Hkv dividing H"),
            std::string::npos);
}

/// layout "bs3hd" (weft-fold-attention-split): q, k and v one packed [B,
/// S, 3, H, D] type, the output [B, S, H, D], one packed gradient; the
/// cost of the same B H pairs. Unpacked shapes, or three types, are
/// refused naming the layout.
TEST(KernelSpec, ChecksAPackedAttention) {
  json packed = {{"scale", 0.25}, {"causal", true}, {"layout", "bs3hd"}};
  OperandPlacement qkv = f32({2, 8, 3, 3, 16}, 0);
  OperandPlacement out = f32({2, 8, 3, 16}, 16384),
                   stats = f32({2, 3, 8}, 20480);
  EXPECT_EQ(errorOf("attention", {qkv, qkv, qkv}, {out, stats}, packed), "");
  EXPECT_EQ(errorOf("attention_grad", {qkv, qkv, qkv, out, stats, out},
                    {f32({2, 8, 3, 3, 16}, 24576)}, packed),
            "");
  EXPECT_NE(errorOf("attention_grad", {qkv, qkv, qkv, out, stats, out},
                    {f32({2, 8, 3, 3, 16}, 24576), f32({2, 8, 3, 3, 16}, 0),
                     f32({2, 8, 3, 3, 16}, 0)},
                    packed)
                .find("writes 1 output(s), the instruction has 3"),
            std::string::npos);
  EXPECT_EQ(costOf("attention", {qkv, qkv, qkv}, {out, stats}, packed).flops,
            costOf("attention",
                   {f32({2, 8, 3, 16}, 0), f32({2, 8, 3, 16}, 4096),
                    f32({2, 8, 3, 16}, 8192)},
                   {out, stats},
                   {{"scale", 0.25}, {"causal", true}, {"layout", "bshd"}})
                .flops);
  OperandPlacement heads = f32({2, 8, 3, 16}, 0);
  EXPECT_NE(errorOf("attention", {heads, heads, heads}, {out, stats}, packed)
                .find("layout \"bs3hd\" takes q, k and v as one packed "
                      "[B, S, 3, H, D] type"),
            std::string::npos);
  EXPECT_NE(errorOf("attention", {qkv, qkv, f32({2, 8, 3, 3, 8}, 8192)},
                    {out, stats}, packed)
                .find("layout \"bs3hd\""),
            std::string::npos);
}

/// wgrad_bias (weft-fold-bias-grad): dY [M, N] and X [M, K] give [N, K]
/// and [N], costing the GEMM and the sums; other shapes are refused.
TEST(KernelSpec, ChecksAWgradBias) {
  OperandPlacement dy = f32({6, 4}, 0), x = f32({6, 3}, 128);
  std::vector<OperandPlacement> out = {f32({4, 3}, 256), f32({4}, 320)};
  EXPECT_EQ(errorOf("wgrad_bias", {dy, x}, out, json::object()), "");
  EXPECT_EQ(costOf("wgrad_bias", {dy, x}, out, json::object()).flops,
            2 * 6 * 4 * 3 + 6 * 4);
  EXPECT_NE(errorOf("wgrad_bias", {dy, f32({5, 3}, 128)}, out, json::object())
                .find("expects grad [M, N] and input [M, K], got [6x4] f32 "
                      "and [5x3] f32"),
            std::string::npos);
  EXPECT_NE(errorOf("wgrad_bias", {dy, x}, {f32({4, 3}, 256), f32({1, 4}, 320)},
                    json::object())
                .find("output 1 is [1x4] f32, wgrad_bias writes [4] f32"),
            std::string::npos);
  // Transposed (an x W layer's X^T dY): the weight gradient is [K, N].
  json transposed = {{"transposed", true}};
  std::vector<OperandPlacement> kn = {f32({3, 4}, 256), f32({4}, 320)};
  EXPECT_EQ(errorOf("wgrad_bias", {dy, x}, kn, transposed), "");
  EXPECT_NE(errorOf("wgrad_bias", {dy, x}, out, transposed)
                .find("output 0 is [4x3] f32, wgrad_bias writes [3x4] f32"),
            std::string::npos);
  // Accumulating into the sums (weft-fold-grad-accumulation): both, of
  // the outputs' types, updated in place; the adds' FLOPs on top.
  OperandPlacement wSum = f32({4, 3}, 256), bSum = f32({4}, 320);
  EXPECT_EQ(errorOf("wgrad_bias", {dy, x, wSum, bSum}, out, json::object()),
            "");
  EXPECT_EQ(
      costOf("wgrad_bias", {dy, x, wSum, bSum}, out, json::object()).flops,
      2 * 6 * 4 * 3 + 6 * 4 + 4 * 3 + 4);
  EXPECT_NE(errorOf("wgrad_bias", {dy, x, wSum}, out, json::object())
                .find("takes the weight's and the bias's sums to accumulate "
                      "into, or neither"),
            std::string::npos);
  EXPECT_NE(errorOf("wgrad_bias", {dy, x, f32({3, 4}, 256), bSum}, out,
                    json::object())
                .find("the weight gradient's sum"),
            std::string::npos);
  EXPECT_NE(errorOf("wgrad_bias", {dy, x, wSum, bSum},
                    {f32({4, 3}, 384), f32({4}, 320)}, json::object())
                .find("output 0 must update input 2 in place"),
            std::string::npos);
}

/// gather_grad accumulating into a table of its output's type
/// (weft-fold-gather-grad-add), over it in place; the add's FLOPs on top.
TEST(KernelSpec, ChecksAGatherGradSum) {
  OperandPlacement dy = f32({3, 4}, 0), idx{{DType::I64, {3}}, 64};
  OperandPlacement sum = f32({5, 4}, 128);
  json attrs = {{"axis", 0}, {"shape", {5, 4}}};
  EXPECT_EQ(errorOf("gather_grad", {dy, idx, sum}, {sum}, attrs), "");
  EXPECT_EQ(costOf("gather_grad", {dy, idx}, {sum}, attrs).flops, 3 * 4);
  EXPECT_EQ(costOf("gather_grad", {dy, idx, sum}, {sum}, attrs).flops,
            3 * 4 + 5 * 4);
  EXPECT_NE(errorOf("gather_grad", {dy, idx, f32({4, 5}, 128)}, {sum}, attrs)
                .find("the sum to accumulate into"),
            std::string::npos);
  EXPECT_NE(errorOf("gather_grad", {dy, idx, sum}, {f32({5, 4}, 256)}, attrs)
                .find("output 0 must update input 2 in place"),
            std::string::npos);
  // A vocabulary shard's, likewise.
  json shard = {{"start", 5}, {"rows", 5}};
  EXPECT_EQ(errorOf("vocab_parallel_gather_grad", {dy, idx, sum}, {sum}, shard),
            "");
  EXPECT_EQ(
      costOf("vocab_parallel_gather_grad", {dy, idx, sum}, {sum}, shard).flops,
      3 * 4 + 5 * 4);
  EXPECT_NE(errorOf("vocab_parallel_gather_grad", {dy, idx, sum},
                    {f32({5, 4}, 256)}, shard)
                .find("output 0 must update input 2 in place"),
            std::string::npos);
}

/// gemm_gelu_tanh (weft-fold-gemm-gelu): the gemm's output twice, its
/// FLOPs and the GELU's; gemm_gelu_tanh_grad's pre-activation has the
/// product's type, else it is refused naming it.
TEST(KernelSpec, ChecksAGemmGelu) {
  OperandPlacement x = f32({6, 4}, 0), w = f32({8, 4}, 128), b = f32({8}, 256);
  json linear = {
      {"alpha", 1.0}, {"beta", 1.0}, {"transA", false}, {"transB", true}};
  std::vector<OperandPlacement> out = {f32({6, 8}, 384), f32({6, 8}, 640)};
  EXPECT_EQ(errorOf("gemm_gelu_tanh", {x, w, b}, out, linear), "");
  EXPECT_EQ(costOf("gemm_gelu_tanh", {x, w, b}, out, linear).flops,
            2 * 6 * 8 * 4 + 6 * 8 + 9 * 6 * 8);
  json product = {{"alpha", 1.0}, {"transA", false}, {"transB", false}};
  OperandPlacement dy = f32({6, 5}, 0), w2 = f32({5, 8}, 128),
                   pre = f32({6, 8}, 384);
  EXPECT_EQ(errorOf("gemm_gelu_tanh_grad", {dy, w2, pre}, {f32({6, 8}, 640)},
                    product),
            "");
  EXPECT_EQ(
      costOf("gemm_gelu_tanh_grad", {dy, w2, pre}, {f32({6, 8}, 640)}, product)
          .flops,
      (2 * 5 + 14) * 6 * 8);
  EXPECT_NE(errorOf("gemm_gelu_tanh_grad", {dy, w2, f32({6, 4}, 384)},
                    {f32({6, 8}, 640)}, product)
                .find("input 2 (the pre-activation) is [6x4] f32, expected "
                      "[6x8] f32"),
            std::string::npos);
}

/// layer_norm_grad's accumulate (weft-fold-layer-norm-grad-add) has the
/// input's type and counts its add; another type is refused naming it.
TEST(KernelSpec, ChecksALayerNormGradsAccumulate) {
  json axis = {{"axis", 1}};
  OperandPlacement x = f32({4, 8}, 0), scale = f32({8}, 128),
                   stats = f32({4, 1}, 192), dy = f32({4, 8}, 256);
  std::vector<OperandPlacement> out = {f32({4, 8}, 384), f32({8}, 512),
                                       f32({8}, 576)};
  EXPECT_EQ(errorOf("layer_norm_grad",
                    {x, scale, stats, stats, dy, f32({4, 8}, 640)}, out, axis),
            "");
  EXPECT_EQ(costOf("layer_norm_grad",
                   {x, scale, stats, stats, dy, f32({4, 8}, 640)}, out, axis)
                .flops,
            13 * 32);
  EXPECT_EQ(
      costOf("layer_norm_grad", {x, scale, stats, stats, dy}, out, axis).flops,
      12 * 32);
  EXPECT_NE(errorOf("layer_norm_grad",
                    {x, scale, stats, stats, dy, f32({8}, 640)}, out, axis)
                .find("input 5 (the accumulated gradient) is [8] f32"),
            std::string::npos);
}

/// add_layer_norm (weft-fold-residual-layer-norm): layer_norm's outputs
/// and the sum, of the input's type; a residual of another shape or
/// dtype (the add does not broadcast) is refused naming it.
TEST(KernelSpec, ChecksAnAddLayerNorm) {
  json attrs = {{"axis", 1}, {"epsilon", 1e-5}};
  OperandPlacement x = f32({4, 8}, 0), residual = f32({4, 8}, 128),
                   scale = f32({8}, 256);
  std::vector<OperandPlacement> out = {f32({4, 8}, 384), f32({4, 1}, 512),
                                       f32({4, 1}, 576), f32({4, 8}, 640)};
  EXPECT_EQ(errorOf("add_layer_norm", {x, residual, scale, scale}, out, attrs),
            "");
  EXPECT_EQ(errorOf("add_layer_norm", {x, residual, scale}, out, attrs), "");
  EXPECT_EQ(costOf("add_layer_norm", {x, residual, scale}, out, attrs).flops,
            9 * 32);
  EXPECT_NE(errorOf("add_layer_norm", {x, f32({8}, 128), scale}, out, attrs)
                .find("input 1 (the residual) is [8] f32, expected [4x8] f32"),
            std::string::npos);
  OperandPlacement half{{DType::BF16, {4, 8}}, 128};
  EXPECT_NE(errorOf("add_layer_norm", {x, half, scale}, out, attrs)
                .find("input 1 (the residual) is [4x8] bf16"),
            std::string::npos);
  std::vector<OperandPlacement> noSum(out.begin(), out.end() - 1);
  EXPECT_NE(errorOf("add_layer_norm", {x, residual, scale}, noSum, attrs), "");
}

/// softmax_cross_entropy_and_grad (weft-fold-loss-grad): the forward's
/// outputs with log_sum_exp and the scores' gradient, over the scores or
/// beside them, never over another input; the seed has the loss's type.
TEST(KernelSpec, ChecksALossAndGrad) {
  json attrs = {{"reduction", "mean"}, {"log_prob_type", "f32"}};
  OperandPlacement scores{{DType::BF16, {4, 8, 3}}, 0},
      labels{{DType::I64, {4, 3}}, 256}, seed = f32({}, 384);
  OperandPlacement loss = f32({}, 448), lse = f32({4, 3}, 512);
  OperandPlacement over{{DType::BF16, {4, 8, 3}}, 0},
      beside{{DType::BF16, {4, 8, 3}}, 640};
  EXPECT_EQ(errorOf("softmax_cross_entropy_and_grad", {scores, labels, seed},
                    {loss, lse, over}, attrs),
            "");
  EXPECT_EQ(errorOf("softmax_cross_entropy_and_grad", {scores, labels, seed},
                    {loss, lse, beside}, attrs),
            "");
  EXPECT_EQ(costOf("softmax_cross_entropy_and_grad", {scores, labels, seed},
                   {loss, lse, over}, attrs)
                .flops,
            10 * 96);
  OperandPlacement halfSeed{{DType::BF16, {}}, 384};
  EXPECT_NE(errorOf("softmax_cross_entropy_and_grad",
                    {scores, labels, halfSeed}, {loss, lse, over}, attrs)
                .find("input 2 (the loss's gradient) is [] bf16, expected "
                      "[] f32"),
            std::string::npos);
  OperandPlacement overLabels{{DType::BF16, {4, 8, 3}}, 256};
  EXPECT_NE(errorOf("softmax_cross_entropy_and_grad", {scores, labels, seed},
                    {loss, lse, overLabels}, attrs)
                .find("output 2 overlaps input 1"),
            std::string::npos);
  OperandPlacement weights{{DType::BF16, {8}}, 576};
  EXPECT_NE(errorOf("softmax_cross_entropy_and_grad",
                    {scores, labels, seed, weights}, {loss, lse, beside}, attrs)
                .find("or f32 beside 16-bit scores without class weights"),
            std::string::npos);
}

/// log_sum_exp (weft-fold-loss-log-prob): the loss's second output is one
/// number per sample; its gradient reads the scores and it, the loss
/// gradient and log-sum-exp f32 beside 16-bit scores; a missing,
/// misshapen or misplaced one is refused naming it.
TEST(KernelSpec, ChecksALossesLogSumExp) {
  json kept = {{"reduction", "mean"}, {"log_sum_exp", true}};
  OperandPlacement scores = f32({4, 8, 3}, 0),
                   labels{{DType::I64, {4, 3}}, 512}, loss = f32({}, 640),
                   lse = f32({4, 3}, 704);
  EXPECT_EQ(
      errorOf("softmax_cross_entropy", {scores, labels}, {loss, lse}, kept),
      "");
  EXPECT_NE(errorOf("softmax_cross_entropy", {scores, labels},
                    {loss, f32({4, 8, 3}, 768)}, kept)
                .find("output 1 is [4x8x3] f32, softmax_cross_entropy "
                      "writes [4x3] f32"),
            std::string::npos);
  OperandPlacement grad = f32({4, 8, 3}, 768);
  EXPECT_EQ(errorOf("softmax_cross_entropy_grad", {scores, labels, loss, lse},
                    {grad}, kept),
            "");
  // Mixed precision: bf16 scores and gradient, f32 loss and log-sum-exp.
  OperandPlacement half{{DType::BF16, {4, 8, 3}}, 0},
      halfGrad{{DType::BF16, {4, 8, 3}}, 768};
  EXPECT_EQ(errorOf("softmax_cross_entropy_grad", {half, labels, loss, lse},
                    {halfGrad}, kept),
            "");
  EXPECT_NE(errorOf("softmax_cross_entropy_grad",
                    {scores, labels, loss, f32({4, 8}, 704)}, {grad}, kept)
                .find("the log-sum-exp is [4x8] f32, expected [4x3] f32"),
            std::string::npos);
  EXPECT_NE(errorOf("softmax_cross_entropy_grad", {scores, labels, loss},
                    {grad}, kept)
                .find("attribute 'log_sum_exp' needs the log-sum-exp as the "
                      "last input"),
            std::string::npos);
  json typed = kept;
  typed["grad_type"] = "bf16";
  EXPECT_NE(errorOf("softmax_cross_entropy_grad", {half, labels, loss, lse},
                    {halfGrad}, typed)
                .find("attribute 'grad_type' is for a log_prob input"),
            std::string::npos);
  EXPECT_NE(errorOf("softmax_cross_entropy_grad",
                    {scores, labels, loss, f32({8}, 896), lse}, {grad},
                    {{"reduction", "mean"}})
                .find("takes 3 or 4 inputs without attribute 'log_sum_exp'"),
            std::string::npos);
  // From the scores: one more FLOP per element (the subtraction).
  EXPECT_EQ(costOf("softmax_cross_entropy_grad", {scores, labels, loss, lse},
                   {grad}, kept)
                .flops,
            4 * 96);
}

/// Mixed precision's loss: f32 loss and log_prob of bf16 scores
/// (log_prob_type), a bf16 gradient of f32 log_prob (grad_type); other
/// combinations are refused naming the attribute.
TEST(KernelSpec, ChecksALossesWidenedTypes) {
  OperandPlacement scores{{DType::BF16, {4, 8}}, 0},
      labels{{DType::I64, {4}}, 128}, logProb = f32({4, 8}, 256);
  json widened = {{"reduction", "mean"}, {"log_prob_type", "f32"}};
  EXPECT_EQ(errorOf("softmax_cross_entropy", {scores, labels},
                    {f32({}, 512), logProb}, widened),
            "");
  EXPECT_NE(errorOf("softmax_cross_entropy", {f32({4, 8}, 0), labels},
                    {{{DType::BF16, {}}, 512}, {{DType::BF16, {4, 8}}, 256}},
                    {{"reduction", "mean"}, {"log_prob_type", "bf16"}})
                .find("attribute 'log_prob_type' is bf16, expected f32"),
            std::string::npos);
  json narrowed = {{"reduction", "mean"}, {"grad_type", "bf16"}};
  EXPECT_EQ(errorOf("softmax_cross_entropy_grad",
                    {logProb, labels, f32({}, 512)}, {{scores.type, 640}},
                    narrowed),
            "");
  // The gradient must be written where its declared type says.
  EXPECT_NE(errorOf("softmax_cross_entropy_grad",
                    {logProb, labels, f32({}, 512)}, {f32({4, 8}, 640)},
                    narrowed)
                .find("output 0 is [4x8] f32, softmax_cross_entropy_grad "
                      "writes [4x8] bf16"),
            std::string::npos);
}
