//===- ShapeUtilsTest.cpp - broadcasting and window arithmetic ------------===//

#include "weft/Dialect/Weft/IR/ShapeUtils.h"
#include "weft/ops/OpCheck.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace weft;

TEST(BroadcastShapes, NumpyRules) {
  // Examples from the ONNX "Broadcasting in ONNX" document.
  using V = llvm::SmallVector<int64_t>;
  EXPECT_EQ(*broadcastShapes({2, 3, 4, 5}, {}), (V{2, 3, 4, 5}));
  EXPECT_EQ(*broadcastShapes({2, 3, 4, 5}, {5}), (V{2, 3, 4, 5}));
  EXPECT_EQ(*broadcastShapes({4, 5}, {2, 3, 4, 5}), (V{2, 3, 4, 5}));
  EXPECT_EQ(*broadcastShapes({1, 4, 5}, {2, 3, 1, 1}), (V{2, 3, 4, 5}));
  EXPECT_EQ(*broadcastShapes({3, 4, 5}, {2, 1, 1, 1}), (V{2, 3, 4, 5}));
  EXPECT_FALSE(broadcastShapes({2, 3}, {4}).has_value());
  EXPECT_FALSE(broadcastShapes({2, 1}, {3, 1, 4, 3}).has_value());
}

namespace {

/// max_pool's output extent on a 1-D input of `in`: the kernel rule's
/// window formula (runtime/lib/specs, the one the dialect infers with).
int64_t pooled(int64_t in, int64_t k, int64_t s, int64_t padBegin,
               int64_t padEnd, int64_t d, bool ceilMode) {
  std::vector<weft::ops::OperandDesc> out;
  nlohmann::json attrs = {{"kernel_shape", {k}},
                          {"strides", {s}},
                          {"pads", {padBegin, padEnd}},
                          {"dilations", {d}},
                          {"ceil_mode", ceilMode}};
  std::string error = weft::ops::inferOutputs(
      weft::ops::Op::MaxPool, {{"f32", {1, 1, in}}}, attrs, &out);
  EXPECT_EQ(error, "");
  return out.empty() ? -1 : out[0].shape[2];
}

} // namespace

TEST(WindowOutputSize, ConvAndPoolFormulas) {
  // floor((in + pads - ((k - 1) * d + 1)) / s) + 1
  EXPECT_EQ(pooled(7, 3, 1, 0, 0, 1, false), 5);
  EXPECT_EQ(pooled(7, 3, 2, 1, 1, 1, false), 4);
  EXPECT_EQ(pooled(7, 3, 1, 0, 0, 2, false), 3); // dilated span 5
  // ceil_mode rounds the last partial window up: 5x5, k2 s2 -> 3.
  EXPECT_EQ(pooled(5, 2, 2, 0, 0, 1, true), 3);
  EXPECT_EQ(pooled(5, 2, 2, 0, 0, 1, false), 2);
  // A window larger than the padded input yields nothing.
  EXPECT_EQ(pooled(2, 5, 1, 0, 0, 1, false), 0);
}

TEST(ByteSize, RoundsSubByteTypesUp) {
  mlir::MLIRContext ctx;
  auto i1 =
      mlir::RankedTensorType::get({3, 5}, mlir::IntegerType::get(&ctx, 1));
  auto f16 = mlir::RankedTensorType::get({4}, mlir::Float16Type::get(&ctx));
  auto scalar = mlir::RankedTensorType::get({}, mlir::Float32Type::get(&ctx));
  EXPECT_EQ(byteSize(i1), 15);
  EXPECT_EQ(byteSize(f16), 8);
  EXPECT_EQ(byteSize(scalar), 4);
  EXPECT_EQ(numElements(scalar), 1);
}
