//===- MaskKernelTest.cpp - the kernels of traced masks -------------------===//
//
// The kernels the exporters' masks, positions and rotary tables run on
// (compare, logical, not, is_nan, is_inf, sin, cos, cumsum), through the
// compiler's constant evaluator (weft/runtime/Evaluate.h), whose values are
// the ones weft-run computes: each against its ONNX definition, edge cases
// included (ties, NaN, infinities).
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Evaluate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

template <typename T>
HostValue value(const char *dtype, std::vector<int64_t> shape,
                const std::vector<T> &elements) {
  HostValue v{dtype, std::move(shape), {}};
  v.bytes.resize(elements.size() * sizeof(T));
  std::memcpy(v.bytes.data(), elements.data(), v.bytes.size());
  return v;
}

HostValue bools(std::vector<int64_t> shape, const std::vector<uint8_t> &b) {
  return value("bool", std::move(shape), b);
}

/// The one output of `kernel` on `inputs`, as bytes (bool: 0/1).
std::vector<uint8_t> run(const char *kernel, std::vector<HostValue> inputs,
                         const json &attrs = json::object()) {
  std::vector<HostValue> out;
  std::string error = evaluateKernel(kernel, inputs, attrs, 1 << 20, &out);
  EXPECT_EQ(error, "");
  if (out.size() != 1)
    return {};
  return std::vector<uint8_t>(out[0].bytes.begin(), out[0].bytes.end());
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

} // namespace

/// Less-13, LessOrEqual-16, Greater-13, GreaterOrEqual-16 with numpy
/// broadcasting: ties decide <= and >=, and NaN compares false.
TEST(MaskKernels, CompareByPredicateWithTiesAndNaN) {
  HostValue a = value<float>("f32", {4}, {1, 2, 3, kNaN});
  HostValue b = value<float>("f32", {1}, {2});
  using B = std::vector<uint8_t>;
  EXPECT_EQ(run("compare", {a, b}, {{"predicate", "less"}}), (B{1, 0, 0, 0}));
  EXPECT_EQ(run("compare", {a, b}, {{"predicate", "less_equal"}}),
            (B{1, 1, 0, 0}));
  EXPECT_EQ(run("compare", {a, b}, {{"predicate", "greater"}}),
            (B{0, 0, 1, 0}));
  EXPECT_EQ(run("compare", {a, b}, {{"predicate", "greater_equal"}}),
            (B{0, 1, 1, 0}));
  // A causal mask as transformers traces it: key position <= query
  // position, [1, 3] against [3, 1].
  HostValue key = value<int64_t>("i64", {1, 3}, {0, 1, 2});
  HostValue query = value<int64_t>("i64", {3, 1}, {0, 1, 2});
  EXPECT_EQ(run("compare", {key, query}, {{"predicate", "less_equal"}}),
            (B{1, 0, 0, 1, 1, 0, 1, 1, 1}));
  std::vector<HostValue> out;
  EXPECT_NE(
      evaluateKernel("compare", {a, b}, {{"predicate", "equal"}}, 64, &out)
          .find("predicate 'equal' is not less"),
      std::string::npos);
}

/// And-7, Or-7, Xor-7 truth tables with broadcasting, and Not-1.
TEST(MaskKernels, LogicTruthTables) {
  HostValue x = bools({2, 1}, {0, 1}), y = bools({1, 2}, {0, 1});
  using B = std::vector<uint8_t>;
  EXPECT_EQ(run("logical", {x, y}, {{"kind", "and"}}), (B{0, 0, 0, 1}));
  EXPECT_EQ(run("logical", {x, y}, {{"kind", "or"}}), (B{0, 1, 1, 1}));
  EXPECT_EQ(run("logical", {x, y}, {{"kind", "xor"}}), (B{0, 1, 1, 0}));
  EXPECT_EQ(run("not", {x}), (B{1, 0}));
}

/// IsNaN-20 and IsInf-20 (each sign on its own), in f32 and f64.
TEST(MaskKernels, FloatTests) {
  using B = std::vector<uint8_t>;
  HostValue f = value<float>("f32", {5}, {0, kNaN, kInf, -kInf, 1e38f});
  HostValue d = value<double>("f64", {5}, {0, NAN, INFINITY, -INFINITY, 1e308});
  for (const HostValue &x : {f, d}) {
    EXPECT_EQ(run("is_nan", {x}), (B{0, 1, 0, 0, 0}));
    EXPECT_EQ(run("is_inf", {x}), (B{0, 0, 1, 1, 0}));
    EXPECT_EQ(run("is_inf", {x}, {{"detect_negative", false}}),
              (B{0, 0, 1, 0, 0}));
    EXPECT_EQ(run("is_inf", {x}, {{"detect_positive", false}}),
              (B{0, 0, 0, 1, 0}));
  }
}

/// Sin-7 and Cos-7 in f32, as the rotary tables use them.
TEST(MaskKernels, SinAndCos) {
  std::vector<float> angles = {0.0f, 1.0f, -2.5f, 100.0f};
  HostValue x = value<float>("f32", {4}, angles);
  std::vector<uint8_t> s = run("sin", {x}), c = run("cos", {x});
  ASSERT_EQ(s.size(), 16u);
  for (size_t k = 0; k < angles.size(); ++k) {
    float sk, ck;
    std::memcpy(&sk, s.data() + 4 * k, 4);
    std::memcpy(&ck, c.data() + 4 * k, 4);
    EXPECT_FLOAT_EQ(sk, std::sin(angles[k]));
    EXPECT_FLOAT_EQ(ck, std::cos(angles[k]));
  }
}

/// The evaluator's refusals: a result beyond the element limit, a 16-bit
/// operand, and the kernel's own refusal of values (flagged as such).
TEST(MaskKernels, EvaluatorRefusals) {
  std::vector<HostValue> out;
  HostValue big = value<float>("f32", {100}, std::vector<float>(100));
  EXPECT_NE(evaluateKernel("sin", {big}, json::object(), 10, &out)
                .find("more than 10 elements"),
            std::string::npos);
  HostValue half{"bf16", {2}, std::vector<char>(4)};
  EXPECT_EQ(evaluateKernel("sin", {half}, json::object(), 10, &out),
            "a 16-bit operand");
  bool refused = false;
  HostValue data = value<int64_t>("i64", {3}, {1, 2, 3});
  HostValue index = value<int64_t>("i64", {}, {7});
  EXPECT_EQ(evaluateKernel("gather", {data, index}, {{"axis", 0}}, 10, &out,
                           &refused),
            "kernel gather: index 7 out of range for dim 3");
  EXPECT_TRUE(refused);
}

/// CumSum-14's four forms, against the ONNX spec's example
/// (x = [1, 2, 3]: [1, 3, 6], exclusive [0, 1, 3], reverse [6, 5, 3],
/// both [5, 3, 0]).
TEST(MaskKernels, CumSumForms) {
  HostValue x = value<int64_t>("i64", {3}, {1, 2, 3});
  auto sums = [&](bool exclusive, bool reverse) {
    std::vector<uint8_t> bytes =
        run("cumsum", {x},
            {{"axis", 0}, {"exclusive", exclusive}, {"reverse", reverse}});
    std::vector<int64_t> out(3);
    std::memcpy(out.data(), bytes.data(), 24);
    return out;
  };
  using V = std::vector<int64_t>;
  EXPECT_EQ(sums(false, false), (V{1, 3, 6}));
  EXPECT_EQ(sums(true, false), (V{0, 1, 3}));
  EXPECT_EQ(sums(false, true), (V{6, 5, 3}));
  EXPECT_EQ(sums(true, true), (V{5, 3, 0}));
}
