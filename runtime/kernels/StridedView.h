//===- StridedView.h - movement ops as strided reads ------------*- C++ -*-===//
//
// transpose, expand and slice read their input through a strided view:
// out[o] = in[base + sum(coord_d(o) * strides[d])] over the output's shape
// (ONNX Transpose-13, Expand-13, Slice-13 with normalised starts and
// steps). The CPU kernels (Movement.cpp) and the CUDA ones build the same
// view here; concat and split move whole rows of `rowBytes(...)` (host).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_STRIDEDVIEW_H
#define WEFT_RUNTIME_KERNELS_STRIDEDVIEW_H

#include "Kernel.h"

#include <cstdint>
#include <vector>

namespace weft::rt {

struct StridedView {
  std::vector<int64_t> strides; ///< input elements per output coordinate
  int64_t base = 0;             ///< input element of output element 0

  /// Output dim d is input dim perm[d].
  static StridedView transpose(const std::vector<int64_t> &inShape,
                               const std::vector<int64_t> &perm) {
    std::vector<int64_t> in = stridesOf(inShape);
    StridedView v;
    for (int64_t p : perm)
      v.strides.push_back(in[p]);
    return v;
  }
  /// numpy broadcast of `inShape` to `outShape`: stride 0 on broadcast dims.
  static StridedView expand(const std::vector<int64_t> &inShape,
                            const std::vector<int64_t> &outShape) {
    return {broadcastStrides(inShape, outShape), 0};
  }
  /// Element starts[d] + i * steps[d] of each dim (an empty output reads
  /// nothing, so its start does not count).
  static StridedView slice(const std::vector<int64_t> &inShape,
                           const std::vector<int64_t> &outShape,
                           const std::vector<int64_t> &starts,
                           const std::vector<int64_t> &steps) {
    std::vector<int64_t> in = stridesOf(inShape);
    StridedView v;
    for (size_t d = 0; d < inShape.size(); ++d) {
      v.strides.push_back(steps[d] * in[d]);
      if (outShape[d] > 0)
        v.base += starts[d] * in[d];
    }
    return v;
  }
};

/// concat and split along `axis`: the tensor is `outer` rows (the product
/// of the dims before `axis`) of `bytes / outer` contiguous bytes each.
inline int64_t outerCount(const std::vector<int64_t> &shape, int64_t axis) {
  int64_t n = 1;
  for (int64_t d = 0; d < axis; ++d)
    n *= shape[d];
  return n;
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_STRIDEDVIEW_H
