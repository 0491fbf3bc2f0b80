//===- ClassTargets.h - targets of the classification losses -*- C++ -*-===//
//
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (ONNX opset 13), and
// their gradients, share the reading of the targets: each element of
// `target` [N, d...] names a class of `input` [N, C, d...]; it weighs
// `weight[class]` (1 without weights) unless it equals `ignore_index`, when
// it weighs 0; "mean" divides by the summed weights.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_CLASSTARGETS_H
#define WEFT_RUNTIME_KERNELS_CLASSTARGETS_H

#include "Kernel.h"

namespace weft::rt {

struct ClassTargets {
  /// Reads the targets of `call` (attributes reduction, ignore_index) for an
  /// input of shape [N, C, d...]; fails on a class outside [0, C).
  ClassTargets(const KernelCall &call, const Tensor &input,
               const Tensor &target, const Tensor *weight)
      : n(input.shape[0]), classes(input.shape[1]),
        inner(input.numel() / (input.shape[0] * input.shape[1])),
        reduction(call.s("reduction")), cls(n * inner), weight(n * inner) {
    bool hasIgnore = call.has("ignore_index");
    int64_t ignore = hasIgnore ? call.i("ignore_index") : 0;
    auto w = [&](int64_t cls) -> double {
      return weight->dtype == DType::F64 ? weight->as<double>()[cls]
                                         : weight->as<float>()[cls];
    };
    for (int64_t k = 0; k < n * inner; ++k) {
      int64_t t = target.dtype == DType::I64 ? target.as<int64_t>()[k]
                                             : target.as<int32_t>()[k];
      if (hasIgnore && t == ignore) {
        cls[k] = -1;
        this->weight[k] = 0;
        continue;
      }
      if (t < 0 || t >= classes)
        call.fail("label " + std::to_string(t) + " out of range [0, " +
                  std::to_string(classes) + ")");
      cls[k] = t;
      this->weight[k] = weight ? w(t) : 1.0;
      weightSum += this->weight[k];
    }
  }

  /// d total / d (element k's unweighted loss) for the loss gradient
  /// `dloss`: its weight times dloss[k] ("none"), dloss ("sum"), or
  /// dloss / weightSum ("mean").
  template <typename T> double scale(const T *dloss, int64_t k) const {
    if (reduction == "none")
      return weight[k] * dloss[k];
    if (reduction == "sum")
      return weight[k] * dloss[0];
    return weightSum != 0 ? weight[k] * dloss[0] / weightSum : 0.0;
  }

  /// Flat index in the input of element k's class (k = b * inner + i).
  int64_t at(int64_t k, int64_t cls) const {
    return ((k / inner) * classes + cls) * inner + k % inner;
  }

  int64_t n, classes, inner;
  std::string reduction;
  std::vector<int64_t> cls;   ///< class of each element; -1 when ignored
  std::vector<double> weight; ///< its weight; 0 when ignored
  double weightSum = 0;       ///< the "mean" denominator
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_CLASSTARGETS_H
