//===- HostTensorTest.cpp - TensorProto decoding and constant folding -----===//

#include "HostTensor.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace weft;
using onnx::TensorProto;

TEST(ReadTensorProto, TypedFieldsAndRawData) {
  TensorProto typed;
  typed.set_data_type(TensorProto::INT64);
  typed.add_dims(3);
  for (int64_t v : {4, -1, 7})
    typed.add_int64_data(v);
  HostTensor t;
  std::string error;
  ASSERT_TRUE(readTensorProto(typed, t, error)) << error;
  EXPECT_EQ(t.toInts(), (llvm::SmallVector<int64_t>{4, -1, 7}));

  // raw_data is little-endian: float 1.5 = 0x3FC00000, -2.0 = 0xC0000000.
  TensorProto raw;
  raw.set_data_type(TensorProto::FLOAT);
  raw.add_dims(2);
  raw.set_raw_data(std::string("\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8));
  ASSERT_TRUE(readTensorProto(raw, t, error)) << error;
  EXPECT_DOUBLE_EQ(t.floats[0], 1.5);
  EXPECT_DOUBLE_EQ(t.floats[1], -2.0);

  // float16 in int32_data holds the bit pattern: 0x3C00 = 1.0.
  TensorProto half;
  half.set_data_type(TensorProto::FLOAT16);
  half.add_int32_data(0x3C00);
  ASSERT_TRUE(readTensorProto(half, t, error)) << error;
  EXPECT_DOUBLE_EQ(t.floats[0], 1.0);
}

TEST(ReadTensorProto, RejectsExternalAndShortData) {
  HostTensor t;
  std::string error;
  TensorProto external;
  external.set_data_type(TensorProto::FLOAT);
  external.add_dims(4);
  external.set_data_location(TensorProto::EXTERNAL);
  EXPECT_FALSE(readTensorProto(external, t, error));
  EXPECT_NE(error.find("external"), std::string::npos);

  TensorProto shortRaw;
  shortRaw.set_data_type(TensorProto::INT32);
  shortRaw.add_dims(2);
  shortRaw.set_raw_data(std::string(4, '\0'));
  EXPECT_FALSE(readTensorProto(shortRaw, t, error));
  EXPECT_NE(error.find("8 expected"), std::string::npos);
}

// The constant evaluator's results come back through fromElementsAttr:
// every dtype round-trips exactly (int64 beyond 2^53, unsigned, bool).
TEST(FromElementsAttr, InvertsToElementsAttr) {
  mlir::MLIRContext ctx;
  HostTensor ints =
      HostTensor::fromInts({INT64_MAX, (int64_t(1) << 53) + 1, -7}, {3});
  HostTensor bools = HostTensor::zeros(TensorProto::BOOL, {2});
  bools.set(0, 1.0);
  HostTensor u8 = HostTensor::zeros(TensorProto::UINT8, {1});
  u8.set(0, 255.0);
  HostTensor f32 = HostTensor::zeros(TensorProto::FLOAT, {2});
  f32.set(0, 0.1f);
  f32.set(1, -INFINITY);
  for (const HostTensor &t : {ints, bools, u8, f32}) {
    std::optional<HostTensor> back = fromElementsAttr(toElementsAttr(t, &ctx));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->dtype, t.dtype);
    EXPECT_EQ(back->shape, t.shape);
    EXPECT_EQ(back->ints, t.ints);
    EXPECT_EQ(back->floats, t.floats);
  }
}

TEST(ToElementsAttr, KeepsDtype) {
  mlir::MLIRContext ctx;
  HostTensor t = HostTensor::zeros(TensorProto::BOOL, {2});
  t.set(1, 5.0); // any non-zero is true
  auto attr = toElementsAttr(t, &ctx);
  EXPECT_TRUE(attr.getElementType().isInteger(1));
  EXPECT_EQ(attr.getValues<bool>()[1], true);
  EXPECT_EQ(attr.getValues<bool>()[0], false);
}

// Found by the import fuzz target: a Concat of shape constants copied int64
// elements through double, converting 2^63 back to int64 (undefined) and
// rounding everything above 2^53.
TEST(HostTensor, IntegersCopyExactlyAndConversionsSaturate) {
  int64_t big = (int64_t(1) << 53) + 1;
  HostTensor in = HostTensor::fromInts({INT64_MAX, big}, {2});
  HostTensor out = HostTensor::zeros(TensorProto::INT64, {2});
  out.copy(0, in, 0);
  out.copy(1, in, 1);
  EXPECT_EQ(out.ints[0], INT64_MAX);
  EXPECT_EQ(out.ints[1], big);
  out.set(0, 1e30);
  out.set(1, -1e30);
  EXPECT_EQ(out.ints[0], INT64_MAX);
  EXPECT_EQ(out.ints[1], INT64_MIN);
  out.set(0, std::nan(""));
  EXPECT_EQ(out.ints[0], 0);
}
