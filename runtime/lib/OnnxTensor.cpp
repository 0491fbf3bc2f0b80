//===- OnnxTensor.cpp - ONNX TensorProto <-> raw bytes --------------------===//

#include "weft/runtime/OnnxTensor.h"

#include "weft/runtime/Files.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

using onnx::TensorProto;

namespace weft::rt {

namespace {
struct Mapping {
  int32_t onnx;
  DType dtype;
};
constexpr Mapping kMappings[] = {
    {TensorProto::FLOAT, DType::F32},   {TensorProto::DOUBLE, DType::F64},
    {TensorProto::FLOAT16, DType::F16}, {TensorProto::BFLOAT16, DType::BF16},
    {TensorProto::INT64, DType::I64},   {TensorProto::INT32, DType::I32},
    {TensorProto::INT16, DType::I16},   {TensorProto::INT8, DType::I8},
    {TensorProto::UINT8, DType::U8},    {TensorProto::UINT16, DType::U16},
    {TensorProto::UINT32, DType::U32},  {TensorProto::UINT64, DType::U64},
    {TensorProto::BOOL, DType::Bool}};

/// Appends `count` values of a typed field, narrowed to `size` bytes each
/// (little-endian host, as every supported platform is).
template <typename Field>
void appendTyped(std::string &out, const Field &field, int64_t size,
                 DType dtype) {
  for (auto v : field) {
    char bytes[8] = {};
    if (dtype == DType::F32) {
      float f = static_cast<float>(v);
      std::memcpy(bytes, &f, 4);
    } else if (dtype == DType::F64) {
      double d = static_cast<double>(v);
      std::memcpy(bytes, &d, 8);
    } else {
      int64_t i = static_cast<int64_t>(v);
      std::memcpy(bytes, &i, 8);
    }
    out.append(bytes, size);
  }
}
} // namespace

DType dtypeOfONNX(int32_t onnxType, const std::string &what) {
  for (const Mapping &m : kMappings)
    if (m.onnx == onnxType)
      return m.dtype;
  throw Error(what + ": ONNX data type " + std::to_string(onnxType) +
              " is not supported");
}

int32_t onnxTypeOf(DType dtype) {
  for (const Mapping &m : kMappings)
    if (m.dtype == dtype)
      return m.onnx;
  return TensorProto::UNDEFINED;
}

std::string tensorBytes(const TensorProto &proto, const std::string &modelDir,
                        const std::string &what) {
  DType dtype = dtypeOfONNX(proto.data_type(), what);
  int64_t size = dtypeSize(dtype), count = 1;
  // At most 2^40 elements: beyond that a count times the element size
  // could overflow, and no CPU holds it.
  for (int64_t d : proto.dims())
    if (d < 0 || __builtin_mul_overflow(count, d, &count) ||
        count > (int64_t(1) << 40))
      throw Error(what + ": dims " +
                  shapeString({proto.dims().begin(), proto.dims().end()}) +
                  " are negative or larger than 2^40 elements");
  std::string out;
  if (proto.data_location() == TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = count * size;
    auto number = [&](const std::string &key, const std::string &text) {
      char *end = nullptr;
      long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end || v < 0)
        throw Error(what + ": external data " + key + " '" + text +
                    "' is not a non-negative integer");
      return static_cast<int64_t>(v);
    };
    for (const auto &entry : proto.external_data()) {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = number("offset", entry.value());
      else if (entry.key() == "length")
        length = number("length", entry.value());
    }
    // ONNX external data lives beside the model (or the data directory):
    // a relative path that stays inside it. Anything else would read any
    // file the user can read.
    std::filesystem::path relative =
        std::filesystem::path(location).lexically_normal();
    if (location.empty() || relative.is_absolute() ||
        (!relative.empty() && *relative.begin() == ".."))
      throw Error(what + ": external data location '" + location +
                  "' is not a path inside '" + modelDir + "'");
    if (length != count * size)
      throw Error(what + ": external data length " + std::to_string(length) +
                  " bytes, the tensor needs " + std::to_string(count * size));
    std::string path = (std::filesystem::path(modelDir) / relative).string();
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw Error(what + ": external data file '" + path + "' cannot be read");
    in.seekg(offset);
    out.resize(length);
    in.read(out.data(), out.size());
    if (!in)
      throw Error(what + ": external data file '" + path + "' is too short");
  } else if (proto.has_raw_data()) {
    out = proto.raw_data();
  } else {
    switch (proto.data_type()) {
    case TensorProto::FLOAT:
      appendTyped(out, proto.float_data(), size, dtype);
      break;
    case TensorProto::DOUBLE:
      appendTyped(out, proto.double_data(), size, dtype);
      break;
    case TensorProto::INT64:
      appendTyped(out, proto.int64_data(), size, dtype);
      break;
    case TensorProto::UINT64:
    case TensorProto::UINT32:
      appendTyped(out, proto.uint64_data(), size, dtype);
      break;
    default:
      appendTyped(out, proto.int32_data(), size, dtype);
      break;
    }
  }
  if (static_cast<int64_t>(out.size()) != count * size)
    throw Error(what + ": holds " + std::to_string(out.size()) + " bytes, " +
                std::to_string(count * size) + " expected");
  return out;
}

TensorProto readTensorFile(const std::string &path) {
  std::string bytes = readFile(path, "data file");
  TensorProto proto;
  if (!proto.ParseFromString(bytes))
    throw Error(path + ": not an ONNX TensorProto");
  return proto;
}

TensorProto makeTensorProto(const std::string &name, DType dtype,
                            const std::vector<int64_t> &shape,
                            std::string bytes) {
  TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnxTypeOf(dtype));
  for (int64_t d : shape)
    proto.add_dims(d);
  proto.set_raw_data(std::move(bytes));
  return proto;
}

void writeTensorFile(const std::string &path, const std::string &name,
                     DType dtype, const std::vector<int64_t> &shape,
                     const std::string &bytes) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  writeFileAtomically(
      path, makeTensorProto(name, dtype, shape, bytes).SerializeAsString(),
      "--dump-outputs");
}

} // namespace weft::rt
