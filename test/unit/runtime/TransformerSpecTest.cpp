//===- TransformerSpecTest.cpp - the Llama block's kernel specs -----------===//
//
// rms_norm, rotary and glu in the kernel specification table: what each
// refuses, naming it, and the FLOPs it counts.
//
//===----------------------------------------------------------------------===//

#include "KernelSpecCheck.h"

using namespace weft::rt;
using namespace weft::rt::spec_check;
using json = nlohmann::json;

/// rms_norm: the scale is exactly the normalised dims (the kernels read
/// it as one row), of x's dtype; inv_rms is f32, f64 beside f64 x, and the
/// gradient checks it as such.
TEST(KernelSpec, ChecksAnRmsNorm) {
  json attrs = {{"axis", 1}, {"epsilon", 1e-6}};
  EXPECT_EQ(errorOf("rms_norm", {f32({6, 8}, 0), f32({8}, 256)},
                    {f32({6, 8}, 512), f32({6, 1}, 768)}, attrs),
            "");
  EXPECT_NE(errorOf("rms_norm", {f32({6, 8}, 0), f32({1, 8}, 256)},
                    {f32({6, 8}, 512), f32({6, 1}, 768)}, attrs)
                .find("scale [1x8] f32 is not the normalised dims [8]"),
            std::string::npos);
  OperandPlacement x64{{DType::F64, {6, 8}}, 0}, s64{{DType::F64, {8}}, 512},
      y64{{DType::F64, {6, 8}}, 1024}, r64{{DType::F64, {6, 1}}, 1536};
  EXPECT_EQ(errorOf("rms_norm", {x64, s64}, {y64, r64}, attrs), "");
  EXPECT_NE(errorOf("rms_norm", {x64, s64}, {y64, f32({6, 1}, 1536)}, attrs)
                .find("output 1 is [6x1] f32"),
            std::string::npos);
  EXPECT_NE(errorOf("rms_norm", {f32({6, 8}, 0), f32({8}, 256)},
                    {f32({6, 8}, 512), f32({6, 1}, 768)},
                    {{"axis", 1}, {"epsilon", -1.0}})
                .find("attribute 'epsilon' is -1"),
            std::string::npos);
  EXPECT_NE(errorOf("rms_norm_grad",
                    {f32({6, 8}, 0), f32({8}, 256), f32({6, 8}, 512),
                     f32({6, 8}, 768)},
                    {f32({6, 8}, 1024), f32({8}, 1280)}, {{"axis", 1}})
                .find("input 2 (the inverse rms) is [6x8] f32, expected [6x1] "
                      "f32"),
            std::string::npos);
}

/// rotary: tables of one type broadcasting to x, the rotated dim (the
/// last, `axis`) even; each refusal names what is wrong.
TEST(KernelSpec, ChecksARotary) {
  json attrs = {{"axis", 2}};
  std::vector<OperandPlacement> in = {f32({2, 6, 8}, 0), f32({6, 8}, 512),
                                      f32({6, 8}, 768)};
  EXPECT_EQ(errorOf("rotary", in, {f32({2, 6, 8}, 1024)}, attrs), "");
  EXPECT_NE(errorOf("rotary", in, {f32({2, 6, 8}, 1024)}, {{"axis", 1}})
                .find("attribute 'axis' is 1, expected the last dim of "
                      "[2x6x8] f32"),
            std::string::npos);
  EXPECT_NE(errorOf("rotary",
                    {f32({2, 6, 7}, 0), f32({6, 7}, 512), f32({6, 7}, 768)},
                    {f32({2, 6, 7}, 1024)}, attrs)
                .find("the rotated dim of [2x6x7] f32 is odd"),
            std::string::npos);
  EXPECT_NE(errorOf("rotary",
                    {f32({2, 6, 8}, 0), f32({6, 8}, 512), f32({6, 4}, 768)},
                    {f32({2, 6, 8}, 1024)}, attrs)
                .find("input 2 (sin) is [6x4] f32, expected [6x8] f32"),
            std::string::npos);
}

/// glu: gate and up of one type, a known activation; the FLOPs are
/// weft/ops/Glu.h's per element.
TEST(KernelSpec, ChecksAGatedLinearUnit) {
  std::vector<OperandPlacement> in = {f32({6, 8}, 0), f32({6, 8}, 256)};
  EXPECT_EQ(errorOf("glu", in, {f32({6, 8}, 512)}, {{"activation", "silu"}}),
            "");
  EXPECT_EQ(
      costOf("glu", in, {f32({6, 8}, 512)}, {{"activation", "silu"}}).flops,
      6 * 48);
  EXPECT_EQ(costOf("glu", in, {f32({6, 8}, 512)}, {{"activation", "gelu_tanh"}})
                .flops,
            10 * 48);
  EXPECT_NE(errorOf("glu", in, {f32({6, 8}, 512)}, {{"activation", "relu"}})
                .find("attribute 'activation' is 'relu', expected \"silu\", "
                      "\"gelu\" or \"gelu_tanh\""),
            std::string::npos);
  EXPECT_NE(errorOf("glu", {f32({6, 8}, 0), f32({8}, 256)}, {f32({6, 8}, 512)},
                    {{"activation", "silu"}})
                .find("input 1 (up) is [8] f32, expected [6x8] f32"),
            std::string::npos);
}
