//===- HostTensor.cpp - small constant tensors folded at import -----------===//

#include "HostTensor.h"

#include "weft/Dialect/Weft/IR/ShapeUtils.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

using namespace mlir;
using onnx::TensorProto;

namespace weft {

bool isFloatDtype(int32_t dtype) {
  return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE ||
         dtype == TensorProto::FLOAT16 || dtype == TensorProto::BFLOAT16;
}

std::optional<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(count, d, &count) ||
        count > kMaxElements)
      return std::nullopt;
  return count;
}

bool HostTensor::isFloat() const { return isFloatDtype(dtype); }

int64_t HostTensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor HostTensor::zeros(int32_t dtype, ArrayRef<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape.assign(shape.begin(), shape.end());
  if (t.isFloat())
    t.floats.assign(t.size(), 0.0);
  else
    t.ints.assign(t.size(), 0);
  return t;
}

HostTensor HostTensor::fromInts(ArrayRef<int64_t> values,
                                ArrayRef<int64_t> shape) {
  HostTensor t = zeros(TensorProto::INT64, shape);
  t.ints.assign(values.begin(), values.end());
  return t;
}

int64_t HostTensor::saturatingInt(double v) {
  // 2^63 is exact in double; int64 holds [-2^63, 2^63).
  constexpr double kLimit = 9223372036854775808.0;
  if (std::isnan(v))
    return 0;
  if (v >= kLimit)
    return INT64_MAX;
  if (v < -kLimit)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

void HostTensor::set(int64_t k, double v) {
  if (isFloat())
    floats[k] = v;
  else if (dtype == TensorProto::BOOL)
    ints[k] = v != 0.0;
  else
    ints[k] = saturatingInt(v);
}

void HostTensor::copy(int64_t k, const HostTensor &from, int64_t j) {
  if (!isFloat() && !from.isFloat() && dtype != TensorProto::BOOL)
    ints[k] = from.ints[j];
  else
    set(k, from.getDouble(j));
}

llvm::SmallVector<int64_t> HostTensor::toInts() const {
  llvm::SmallVector<int64_t> out(size());
  for (int64_t k = 0; k < size(); ++k)
    out[k] = getInt(k);
  return out;
}

Type toMLIRElementType(int32_t dtype, MLIRContext *ctx) {
  switch (dtype) {
  case TensorProto::FLOAT:
    return Float32Type::get(ctx);
  case TensorProto::DOUBLE:
    return Float64Type::get(ctx);
  case TensorProto::FLOAT16:
    return Float16Type::get(ctx);
  case TensorProto::BFLOAT16:
    return BFloat16Type::get(ctx);
  case TensorProto::BOOL:
    return IntegerType::get(ctx, 1);
  case TensorProto::INT8:
    return IntegerType::get(ctx, 8);
  case TensorProto::INT16:
    return IntegerType::get(ctx, 16);
  case TensorProto::INT32:
    return IntegerType::get(ctx, 32);
  case TensorProto::INT64:
    return IntegerType::get(ctx, 64);
  case TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  default:
    return {};
  }
}

namespace {
/// Bytes per element in raw_data.
int64_t rawWidth(int32_t dtype) {
  switch (dtype) {
  case TensorProto::BOOL:
  case TensorProto::INT8:
  case TensorProto::UINT8:
    return 1;
  case TensorProto::INT16:
  case TensorProto::UINT16:
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return 2;
  case TensorProto::INT32:
  case TensorProto::UINT32:
  case TensorProto::FLOAT:
    return 4;
  case TensorProto::INT64:
  case TensorProto::UINT64:
  case TensorProto::DOUBLE:
    return 8;
  default:
    return 0;
  }
}

double halfToDouble(uint16_t bits, bool bfloat) {
  if (bfloat) {
    uint32_t word = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
  }
  llvm::APFloat f(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  return f.convertToFloat();
}

/// Decodes one little-endian raw_data element.
double decodeRaw(const char *p, int32_t dtype, int64_t *asInt) {
  using namespace llvm::support;
  switch (dtype) {
  case TensorProto::BOOL:
  case TensorProto::UINT8:
    *asInt = (uint8_t)*p;
    return 0;
  case TensorProto::INT8:
    *asInt = (int8_t)*p;
    return 0;
  case TensorProto::INT16:
    *asInt = (int16_t)endian::read16le(p);
    return 0;
  case TensorProto::UINT16:
    *asInt = endian::read16le(p);
    return 0;
  case TensorProto::INT32:
    *asInt = (int32_t)endian::read32le(p);
    return 0;
  case TensorProto::UINT32:
    *asInt = endian::read32le(p);
    return 0;
  case TensorProto::INT64:
  case TensorProto::UINT64:
    *asInt = (int64_t)endian::read64le(p);
    return 0;
  case TensorProto::FLOAT16:
    return halfToDouble(endian::read16le(p), false);
  case TensorProto::BFLOAT16:
    return halfToDouble(endian::read16le(p), true);
  case TensorProto::FLOAT: {
    uint32_t w = endian::read32le(p);
    float f;
    std::memcpy(&f, &w, 4);
    return f;
  }
  case TensorProto::DOUBLE: {
    uint64_t w = endian::read64le(p);
    double d;
    std::memcpy(&d, &w, 8);
    return d;
  }
  }
  return 0;
}
} // namespace

/// Loads the bytes of an externally stored tensor into `raw`.
static bool readExternal(const TensorProto &proto, llvm::StringRef modelDir,
                         std::string &raw, std::string &error) {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &entry : proto.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = std::strtoull(entry.value().c_str(), nullptr, 10);
    else if (entry.key() == "length")
      length = std::strtoull(entry.value().c_str(), nullptr, 10);
  }
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (location.empty() || !buffer) {
    error = "its external data file '" + std::string(path) + "' cannot be read";
    return false;
  }
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (offset > bytes.size() || (length && offset + *length > bytes.size())) {
    error =
        "its external data lies beyond the end of '" + std::string(path) + "'";
    return false;
  }
  raw = bytes.substr(offset, length ? *length : bytes.size() - offset).str();
  return true;
}

bool inlineExternalData(TensorProto &proto, llvm::StringRef modelDir,
                        std::string &error) {
  std::string raw;
  if (!readExternal(proto, modelDir, raw, error))
    return false;
  proto.clear_external_data();
  proto.set_data_location(TensorProto::DEFAULT);
  proto.set_raw_data(std::move(raw));
  return true;
}

/// The number of values in the typed field that holds `proto`'s data, per
/// onnx.proto: float_data, double_data, int64_data, uint64_data, and
/// int32_data for every narrower type (f16 as bits).
static int64_t typedValueCount(const TensorProto &proto) {
  switch (proto.data_type()) {
  case TensorProto::FLOAT:
    return proto.float_data_size();
  case TensorProto::DOUBLE:
    return proto.double_data_size();
  case TensorProto::INT64:
    return proto.int64_data_size();
  case TensorProto::UINT64:
  case TensorProto::UINT32:
    return proto.uint64_data_size();
  default:
    return proto.int32_data_size();
  }
}

bool readTensorProto(const TensorProto &proto, HostTensor &out,
                     std::string &error, llvm::StringRef modelDir) {
  if (proto.data_location() == TensorProto::EXTERNAL) {
    TensorProto inlined = proto;
    if (!inlineExternalData(inlined, modelDir, error))
      return false;
    return readTensorProto(inlined, out, error);
  }
  int64_t width = rawWidth(proto.data_type());
  if (width == 0) {
    error = "dtype " + std::to_string(proto.data_type()) + " is not supported";
    return false;
  }
  // The declared size is checked, and held against the bytes present,
  // before anything is allocated: a few bytes of protobuf may declare
  // terabytes.
  std::optional<int64_t> count = checkedElementCount(
      llvm::SmallVector<int64_t>(proto.dims().begin(), proto.dims().end()));
  if (!count) {
    error = "dims are negative or hold more than 2^40 elements";
    return false;
  }
  int64_t n = *count;
  if (proto.has_raw_data() && (int64_t)proto.raw_data().size() != n * width) {
    error = "raw_data holds " + std::to_string(proto.raw_data().size()) +
            " bytes, " + std::to_string(n * width) + " expected";
    return false;
  }
  if (!proto.has_raw_data() && typedValueCount(proto) != n) {
    error = "holds " + std::to_string(typedValueCount(proto)) + " values, " +
            std::to_string(n) + " expected";
    return false;
  }
  out = HostTensor::zeros(
      proto.data_type(),
      llvm::SmallVector<int64_t>(proto.dims().begin(), proto.dims().end()));
  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    for (int64_t k = 0; k < n; ++k) {
      int64_t i = 0;
      double d = decodeRaw(raw.data() + k * width, proto.data_type(), &i);
      if (out.isFloat())
        out.floats[k] = d;
      else
        out.ints[k] = i;
    }
    return true;
  }
  // Typed fields, per onnx.proto: float_data, double_data, int64_data,
  // uint64_data, and int32_data for every narrower type (f16 as bits).
  auto fill = [&](const auto &field, auto convert) {
    for (int64_t k = 0; k < n; ++k) // the count was checked above
      convert(k, field.Get(k));
    return true;
  };
  switch (proto.data_type()) {
  case TensorProto::FLOAT:
    return fill(proto.float_data(),
                [&](int64_t k, float v) { out.floats[k] = v; });
  case TensorProto::DOUBLE:
    return fill(proto.double_data(),
                [&](int64_t k, double v) { out.floats[k] = v; });
  case TensorProto::INT64:
    return fill(proto.int64_data(),
                [&](int64_t k, int64_t v) { out.ints[k] = v; });
  case TensorProto::UINT64:
  case TensorProto::UINT32:
    return fill(proto.uint64_data(),
                [&](int64_t k, uint64_t v) { out.ints[k] = v; });
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    return fill(proto.int32_data(), [&](int64_t k, int32_t v) {
      out.floats[k] =
          halfToDouble(uint16_t(v), proto.data_type() == TensorProto::BFLOAT16);
    });
  default:
    return fill(proto.int32_data(),
                [&](int64_t k, int32_t v) { out.ints[k] = v; });
  }
}

DenseElementsAttr toElementsAttr(const HostTensor &t, MLIRContext *ctx) {
  Type element = toMLIRElementType(t.dtype, ctx);
  auto type = RankedTensorType::get(t.shape, element);
  if (auto floatType = dyn_cast<FloatType>(element)) {
    llvm::SmallVector<llvm::APFloat> values;
    values.reserve(t.size());
    for (double d : t.floats) {
      llvm::APFloat f(d);
      bool lost;
      f.convert(floatType.getFloatSemantics(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      values.push_back(f);
    }
    return DenseElementsAttr::get(type, values);
  }
  unsigned width = element.getIntOrFloatBitWidth();
  if (width == 1) {
    llvm::SmallVector<bool> values(t.ints.begin(), t.ints.end());
    return DenseElementsAttr::get(type, values);
  }
  llvm::SmallVector<llvm::APInt> values;
  values.reserve(t.size());
  for (int64_t v : t.ints)
    values.push_back(
        llvm::APInt(width, v, /*isSigned=*/true, /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, values);
}

std::optional<HostTensor> fromElementsAttr(DenseElementsAttr attr) {
  auto type = cast<RankedTensorType>(attr.getType());
  Type element = type.getElementType();
  static const int32_t dtypes[] = {
      TensorProto::FLOAT,    TensorProto::DOUBLE, TensorProto::FLOAT16,
      TensorProto::BFLOAT16, TensorProto::BOOL,   TensorProto::INT8,
      TensorProto::INT16,    TensorProto::INT32,  TensorProto::INT64,
      TensorProto::UINT8,    TensorProto::UINT16, TensorProto::UINT32,
      TensorProto::UINT64};
  const int32_t *dtype = llvm::find_if(dtypes, [&](int32_t d) {
    return toMLIRElementType(d, element.getContext()) == element;
  });
  if (dtype == std::end(dtypes))
    return std::nullopt;
  HostTensor t = HostTensor::zeros(*dtype, type.getShape());
  if (isa<FloatType>(element)) {
    int64_t k = 0;
    for (const llvm::APFloat &v : attr.getValues<llvm::APFloat>())
      t.floats[k++] = v.convertToDouble();
    return t;
  }
  bool isUnsigned = element.isUnsignedInteger();
  int64_t k = 0;
  for (const llvm::APInt &v : attr.getValues<llvm::APInt>())
    t.ints[k++] = isUnsigned || v.getBitWidth() == 1 ? int64_t(v.getZExtValue())
                                                     : v.getSExtValue();
  return t;
}

} // namespace weft
