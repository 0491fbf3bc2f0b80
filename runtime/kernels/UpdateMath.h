//===- UpdateMath.h - optimizer and loss-scale steps -------*- C++ -*-===//
//
// The per-element arithmetic of the update kernels, written once for the
// CPU kernels (Optimizer.cpp) and the CUDA ones (backends/cuda), so the CPU
// tests exercise the math the GPU runs.
//
//   - AdamW: Loshchilov & Hutter (ICLR 2019) as torch.optim.AdamW computes
//     it at step t (amsgrad off): decay, moments, bias-corrected step;
//   - SGD: torch.optim.SGD (dampening 0): weight decay, momentum buffer
//     (the gradient itself at the first step), Nesterov;
//   - the loss scale: torch.amp's _amp_update_scale_ on [scale,
//     growth_tracker, skipped_steps].
//
// The gradient arrives multiplied by `inverse` (1 / the loss scale, or 1).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_UPDATEMATH_H
#define WEFT_RUNTIME_KERNELS_UPDATEMATH_H

#include "Half.h"

#include <cmath>
#include <cstdint>

namespace weft::rt {

/// One AdamW step's constants at step t (1-based, skipped steps not
/// counted).
template <typename T> struct AdamWStep {
  T keep, beta1, beta2, eps, stepSize, bias2Sqrt, inverse;

  /// On the device too: t and the scale are read there (the loss
  /// scaler lives in device memory).
  WEFT_HOST_DEVICE static AdamWStep at(double t, double lr, double beta1,
                                       double beta2, double eps, double decay,
                                       double inverse) {
    using std::pow;
    using std::sqrt;
    // torch: step_size = lr / bias1; denom = sqrt(v) / sqrt(bias2) + eps.
    double bias1 = 1 - pow(beta1, t), bias2 = 1 - pow(beta2, t);
    return {T(1 - lr * decay), T(beta1),       T(beta2),  T(eps),
            T(lr / bias1),     T(sqrt(bias2)), T(inverse)};
  }

  WEFT_HOST_DEVICE void operator()(T grad, T &p, T &m, T &v) const {
    using std::sqrt;
    T g = grad * inverse;
    p *= keep;
    m = beta1 * m + (1 - beta1) * g;
    v = beta2 * v + (1 - beta2) * g * g;
    T denom = sqrt(v) / bias2Sqrt + eps;
    p -= stepSize * (m / denom);
  }
};

/// Which optional inputs an update has, from its input count (plan format:
/// the f32 master copy after the state, then the loss scaler and
/// found_inf; the scaler only beside a master or alone, never ambiguous).
struct UpdateInputs {
  bool master = false, scaled = false;

  /// AdamW: (param, grad, m, v) then 0, 1, 2 or 3 more.
  WEFT_HOST_DEVICE static UpdateInputs adamw(size_t count) {
    return {count == 5 || count == 7, count >= 6};
  }
  /// SGD: (param, grad, buffer when momentum != 0) then the same.
  WEFT_HOST_DEVICE static UpdateInputs sgd(size_t count, bool buffer) {
    size_t extra = count - (buffer ? 3 : 2);
    return {extra == 1 || extra == 3, extra >= 2};
  }
};

/// One SGD step's constants; `first` is the first step taken (the buffer
/// starts as the gradient).
template <typename T> struct SgdStep {
  T lr, momentum, decay, inverse;
  bool nesterov, first;

  /// `buffer` is null without momentum.
  WEFT_HOST_DEVICE void operator()(T grad, T &p, T *buffer) const {
    T d = grad * inverse + decay * p;
    if (buffer) {
      *buffer = first ? d : momentum * *buffer + d;
      d = nesterov ? d + momentum * *buffer : *buffer;
    }
    p -= lr * d;
  }
};

/// GradScaler.update on `state` = [scale, growth_tracker, skipped_steps].
WEFT_HOST_DEVICE inline void updateLossScale(float *state, bool foundInf,
                                             double growthFactor,
                                             double backoffFactor,
                                             int64_t growthInterval) {
  if (foundInf) {
    state[0] = static_cast<float>(state[0] * backoffFactor);
    state[1] = 0;
    state[2] += 1;
    return;
  }
  state[1] += 1;
  if (state[1] >= static_cast<float>(growthInterval)) {
    state[0] = static_cast<float>(state[0] * growthFactor);
    state[1] = 0;
  }
}

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_UPDATEMATH_H
