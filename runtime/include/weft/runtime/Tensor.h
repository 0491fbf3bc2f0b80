//===- Tensor.h - element types and tensor views of the runtime -*- C++ -*-===//
//
// A Tensor is a non-owning view of bytes in a rank's arena: dtype, shape
// (row-major, contiguous). Kernels read and write through views only.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_TENSOR_H
#define WEFT_RUNTIME_TENSOR_H

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace weft::rt {

/// Element types of the plan format ("f32", "i64", "bool", ...).
enum class DType {
  F32,
  F64,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U8,
  U16,
  U32,
  U64,
  Bool
};

/// Parses a plan dtype name; throws PlanError-compatible std::invalid_argument.
DType parseDType(const std::string &name);
const char *dtypeName(DType dtype);
/// Bytes per element.
int64_t dtypeSize(DType dtype);
bool isFloat(DType dtype);
/// A 16-bit float (f16 or bf16): mixed precision's activation types.
bool isHalf(DType dtype);

/// Error in a plan, data or weight file, or an unsupported kernel case: the
/// message names the field, file or kernel. weft-run prints it and exits 1.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Tensor {
  void *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  int64_t bytes() const { return numel() * dtypeSize(dtype); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// Row-major strides (elements) of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);

/// Shape as "[2x3x4]" for messages.
std::string shapeString(const std::vector<int64_t> &shape);

} // namespace weft::rt

#endif // WEFT_RUNTIME_TENSOR_H
