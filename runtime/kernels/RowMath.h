//===- RowMath.h - softmax along an axis, host/device -----------*- C++ -*-===//
//
// ONNX Softmax-13 and LogSoftmax-13, one row at a time: the maximum is
// subtracted first (exp never overflows), the sum accumulates in double,
// the result is exp(x - max) / sum (recomputed, not stored and rescaled:
// a 16-bit output rounds once) or x - max - log(sum). Written once for the
// CPU kernel (Normalization.cpp, every row) and the CUDA one (a row per
// thread); `x(d)` reads element d of the row as T, `y(d, v)` writes it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_ROWMATH_H
#define WEFT_RUNTIME_KERNELS_ROWMATH_H

#include "Half.h"

#include <cmath>
#include <cstdint>

namespace weft::rt {

template <bool Log, typename T, typename In, typename Out>
WEFT_HOST_DEVICE void softmaxRow(int64_t dim, In x, Out y) {
  using std::exp;
  using std::log;
  T max = x(0);
  for (int64_t d = 1; d < dim; ++d) {
    T v = x(d);
    max = v > max ? v : max;
  }
  double sum = 0;
  for (int64_t d = 0; d < dim; ++d)
    sum += exp(x(d) - max);
  if (Log) {
    T logSum = static_cast<T>(log(sum));
    for (int64_t d = 0; d < dim; ++d)
      y(d, x(d) - max - logSum);
  } else {
    T scale = static_cast<T>(1.0 / sum);
    for (int64_t d = 0; d < dim; ++d)
      y(d, static_cast<T>(exp(x(d) - max)) * scale);
  }
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_ROWMATH_H
