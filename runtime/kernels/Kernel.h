//===- Kernel.h - the kernel calling convention of the runtime --*- C++ -*-===//
//
// A kernel is a plain function of its input and output tensor views and the
// instruction's attributes (plan format: docs/plan-format.md), called only
// with operands its specification-table entry admits (KernelSpec.h). The
// math is written once here, over raw pointers, so the CUDA backend can
// compile the same functions; the CPU backend calls them directly.
//
// Unsupported cases (a dtype a kernel does not implement) throw Error naming
// the kernel and the dtype.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_KERNEL_H
#define WEFT_RUNTIME_KERNELS_KERNEL_H

#include "weft/runtime/KernelSpec.h"
#include "weft/runtime/OpTable.h"
#include "weft/runtime/Tensor.h"

#include <array>
#include <map>
#include <string>

namespace weft::rt {

/// Where in the training step a kernel runs: the key of the counter-based
/// RNG (dropout masks) and of trace events.
struct KernelContext {
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t microBatch = 0;
  int64_t instruction = 0; ///< index in the rank's instruction list
};

struct KernelCall {
  std::string kernel;
  std::vector<Tensor> in, out;
  /// Checked at plan load against the kernel's entry (KernelSpec.h): the
  /// required attributes are present and of their kind, shapes agree.
  const KernelAttrs &attrs;
  const KernelContext &ctx;

  [[noreturn]] void fail(const std::string &message) const {
    throw Error("kernel " + kernel + ": " + message);
  }
  bool has(const char *name) const { return attrs.has(name); }
  int64_t i(const char *name) const { return attrs.i(name); }
  double f(const char *name) const { return attrs.f(name); }
  bool b(const char *name) const { return attrs.b(name); }
  bool flag(const char *name) const { return attrs.flag(name); }
  const std::string &s(const char *name) const { return attrs.s(name); }
  const std::vector<int64_t> &ints(const char *name) const {
    return attrs.ints(name);
  }
  const std::vector<double> &floats(const char *name) const {
    return attrs.floats(name);
  }
  [[noreturn]] void unsupported(DType dtype) const {
    fail(std::string("dtype ") + dtypeName(dtype) +
         " is not supported on the CPU backend");
  }
};

using KernelFn = void (*)(const KernelCall &);
using KernelTable = OpTable<KernelFn>;

void registerElementwiseKernels(KernelTable &table);
void registerLinearAlgebraKernels(KernelTable &table);
void registerNormalizationKernels(KernelTable &table);
void registerReductionKernels(KernelTable &table);
void registerMovementKernels(KernelTable &table);
void registerConvolutionKernels(KernelTable &table);
void registerPoolingKernels(KernelTable &table);
void registerLossKernels(KernelTable &table);
void registerBackwardKernels(KernelTable &table);
void registerOptimizerKernels(KernelTable &table);
void registerAttentionKernels(KernelTable &table);
void registerRotaryKernels(KernelTable &table);
void registerVocabParallelKernels(KernelTable &table);

/// Every kernel the CPU backend implements, by plan kernel name.
const KernelTable &kernelTable();

/// Calls `fn.template operator()<T>()` with T the C++ integer type of
/// `dtype` and returns true; false for any other dtype (the caller names
/// its backend in the error). Shared by the CPU and CUDA kernels.
template <typename Fn> bool dispatchInteger(DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::I64:
    return fn.template operator()<int64_t>(), true;
  case DType::I32:
    return fn.template operator()<int32_t>(), true;
  case DType::I16:
    return fn.template operator()<int16_t>(), true;
  case DType::I8:
    return fn.template operator()<int8_t>(), true;
  case DType::U8:
    return fn.template operator()<uint8_t>(), true;
  case DType::U16:
    return fn.template operator()<uint16_t>(), true;
  case DType::U32:
    return fn.template operator()<uint32_t>(), true;
  case DType::U64:
    return fn.template operator()<uint64_t>(), true;
  default:
    return false;
  }
}

/// Calls `fn.template operator()<T>()` with T the C++ type of `dtype`, for
/// the numeric dtypes (float, double and integers; not f16/bf16/bool).
template <typename Fn>
void dispatchNumeric(const KernelCall &call, DType dtype, Fn &&fn) {
  if (dtype == DType::F32)
    return fn.template operator()<float>();
  if (dtype == DType::F64)
    return fn.template operator()<double>();
  if (!dispatchInteger(dtype, fn))
    call.unsupported(dtype);
}

/// Same for float and double only.
template <typename Fn>
void dispatchFloat(const KernelCall &call, DType dtype, Fn &&fn) {
  switch (dtype) {
  case DType::F32:
    return fn.template operator()<float>();
  case DType::F64:
    return fn.template operator()<double>();
  default:
    call.unsupported(dtype);
  }
}

/// Calls fn(tag) with tag an unsigned integer of `size` bytes (1, 2, 4, 8):
/// for kernels that move elements without looking at them.
template <typename Fn> void dispatchBySize(int64_t size, Fn &&fn) {
  switch (size) {
  case 1:
    return fn(uint8_t());
  case 2:
    return fn(uint16_t());
  case 4:
    return fn(uint32_t());
  default:
    return fn(uint64_t());
  }
}

/// Writes `value` converted to `dtype` into `out` (one element of f32,
/// f64, f16 or bf16 (through f32, rounded to nearest even) or an integer
/// type; Movement.cpp).
void storeScalar(char *out, DType dtype, double value);

/// ONNX Resize-13, mode nearest: the input index (in [0, inLen)) output
/// coordinate `x` reads along a dim of `inLen` -> `outLen` at `scale`,
/// under a coordinate_transformation_mode and nearest_mode (Movement.cpp).
int64_t nearestSource(int64_t x, int64_t inLen, int64_t outLen, double scale,
                      const std::string &transform, const std::string &mode);

/// `shape` as [outer, dim, inner] around `axis`: the product of the dims
/// before it, its size, the product of the dims after it (the rows a
/// softmax, gather or scatter walks; plain data, passed to CUDA kernels).
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
  AxisView(const std::vector<int64_t> &shape, int64_t axis) {
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      (d < axis ? outer : d == axis ? dim : inner) *= shape[d];
  }
  /// The rows along the axis: outer x inner of them, `dim` elements each.
  int64_t rows() const { return outer * inner; }
};

/// gather_elements' reads: for each position p of `indices` (row-major),
/// fn(p, q) with q the offset in `dataShape` of the element p reads (p with
/// p[axis] = indices[p], a negative index counted from the end). An index
/// outside the axis fails the call.
template <typename Fn>
void forEachElementRead(const KernelCall &call, const Tensor &indices,
                        const std::vector<int64_t> &dataShape, int64_t axis,
                        Fn &&fn) {
  int64_t rank = indices.rank(), dim = dataShape[axis];
  std::vector<int64_t> strides(rank, 1), at(rank, 0);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * dataShape[d + 1];
  for (int64_t p = 0, n = indices.numel(); p < n; ++p) {
    int64_t i = indices.dtype == DType::I64 ? indices.as<int64_t>()[p]
                                            : indices.as<int32_t>()[p];
    if (i < -dim || i >= dim)
      call.fail("index " + std::to_string(i) + " out of range for dim " +
                std::to_string(dim));
    int64_t q = 0;
    for (int64_t d = 0; d < rank; ++d)
      q += (d == axis ? (i < 0 ? i + dim : i) : at[d]) * strides[d];
    fn(p, q);
    for (int64_t d = rank - 1; d >= 0 && ++at[d] == indices.shape[d]; --d)
      at[d] = 0;
  }
}

/// Strides of `shape` broadcast to `outShape` (numpy alignment from the
/// right; 0 on broadcast dims).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &outShape);

/// For each element of `outShape` in row-major order, the element of
/// `shape` broadcast to it (numpy's rule): a per-element index table.
std::vector<int64_t> broadcastIndex(const std::vector<int64_t> &shape,
                                    const std::vector<int64_t> &outShape);

/// Visits `outShape` in row-major order one innermost row at a time:
/// fn(outOffset, operandOffsets, count, innerStrides) covers `count` output
/// elements from `outOffset`, operand k starting at operandOffsets[k] and
/// advancing by innerStrides[k] (0 on a broadcast dim). Kernels write the
/// row loop themselves so the compiler can vectorise the stride-1 cases.
template <size_t N, typename Fn>
void forEachRow(const std::vector<int64_t> &outShape,
                const std::array<std::vector<int64_t>, N> &strides, Fn &&fn) {
  int64_t rank = outShape.size();
  int64_t total = 1;
  for (int64_t d : outShape)
    total *= d;
  if (total == 0)
    return;
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> offsets{}, innerStride{};
  int64_t inner = rank ? outShape[rank - 1] : 1;
  for (size_t k = 0; k < N; ++k)
    innerStride[k] = rank ? strides[k][rank - 1] : 0;
  for (int64_t o = 0; o < total; o += inner) {
    fn(o, offsets, inner, innerStride);
    // Advance the odometer over the outer dims.
    for (int64_t d = rank - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k)
        offsets[k] += strides[k][d];
      if (idx[d] < outShape[d])
        break;
      for (size_t k = 0; k < N; ++k)
        offsets[k] -= strides[k][d] * idx[d];
      idx[d] = 0;
    }
  }
}

/// Element-at-a-time form of forEachRow: fn(outIndex, operandOffsets).
template <size_t N, typename Fn>
void forEachBroadcast(const std::vector<int64_t> &outShape,
                      const std::array<std::vector<int64_t>, N> &strides,
                      Fn &&fn) {
  forEachRow<N>(outShape, strides,
                [&](int64_t o, std::array<int64_t, N> base, int64_t count,
                    const std::array<int64_t, N> &step) {
                  for (int64_t j = 0; j < count; ++j) {
                    fn(o + j, base);
                    for (size_t k = 0; k < N; ++k)
                      base[k] += step[k];
                  }
                });
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_KERNEL_H
