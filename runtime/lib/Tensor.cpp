//===- Tensor.cpp - element types and tensor views ------------------------===//

#include "weft/runtime/Tensor.h"

namespace weft::rt {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  int64_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "f32", 4},   {DType::F64, "f64", 8}, {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2}, {DType::I64, "i64", 8}, {DType::I32, "i32", 4},
    {DType::I16, "i16", 2},   {DType::I8, "i8", 1},   {DType::U8, "u8", 1},
    {DType::U16, "u16", 2},   {DType::U32, "u32", 4}, {DType::U64, "u64", 8},
    {DType::Bool, "bool", 1}};
} // namespace

DType parseDType(const std::string &name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name)
      return info.dtype;
  throw Error("unknown dtype '" + name + "'");
}

const char *dtypeName(DType dtype) {
  return kDTypes[static_cast<int>(dtype)].name;
}

int64_t dtypeSize(DType dtype) { return kDTypes[static_cast<int>(dtype)].size; }

bool isFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16 ||
         dtype == DType::BF16;
}

bool isHalf(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace weft::rt
