//===- Optimizer.cpp - in-place parameter updates (AdamW, SGD) ------------===//
//
// torch.optim.AdamW / torch.optim.SGD step semantics (formulas on the ops,
// docs/generated/Dialects/Weft.md). The step number t = ctx.step + 1. The
// outputs alias the parameter and state inputs: updates are in place.
//
// Mixed precision: with a master copy (the last input, f32) the step runs
// on the master and the parameter output receives it; the backend has
// widened the 16-bit parameter and gradient and rounds that output back
// (CpuBackend's widening), so the parameter is the master rounded.
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace weft::rt {

namespace {

/// Dynamic loss scaling (GradScaler): the scaler state [scale,
/// growth_tracker, skipped_steps] and found_inf, the last two inputs of a
/// scaled update. The update divides the gradient by the scale, is skipped
/// when found_inf is set, and counts its steps without the skipped ones.
struct LossScale {
  bool skip = false;
  double inverse = 1.0;
  int64_t skipped = 0;

  static LossScale of(const KernelCall &call, bool scaled) {
    LossScale s;
    if (!scaled)
      return s;
    size_t n = call.in.size();
    const float *scaler = call.in[n - 2].as<float>();
    s.skip = call.in[n - 1].as<float>()[0] != 0.0f;
    s.inverse = 1.0 / scaler[0];
    s.skipped = static_cast<int64_t>(scaler[2]);
    return s;
  }
};

template <typename T> void adamw(const KernelCall &call) {
  const Tensor &param = call.in[0], &grad = call.in[1];
  double lr = call.f("lr"), beta1 = call.f("beta1"), beta2 = call.f("beta2"),
         eps = call.f("eps"), decay = call.f("weight_decay");
  // Inputs: (param, grad, m, v), then master, then scaler and found_inf.
  size_t n = call.in.size();
  bool master = n == 5 || n == 7;
  LossScale scale = LossScale::of(call, n == 6 || n == 7);
  if (scale.skip)
    return;
  double t = static_cast<double>(call.ctx.step + 1 - scale.skipped);
  double bias1 = 1 - std::pow(beta1, t), bias2 = 1 - std::pow(beta2, t);
  // torch: step_size = lr / bias1; denom = sqrt(v) / sqrt(bias2) + eps.
  T stepSize = static_cast<T>(lr / bias1);
  T bias2Sqrt = static_cast<T>(std::sqrt(bias2));
  T keep = static_cast<T>(1 - lr * decay);
  T b1 = beta1, b2 = beta2, e = eps, inverse = T(scale.inverse);
  const T *grads = grad.as<T>();
  T *p = call.out[master ? 3 : 0].as<T>(), *m = call.out[1].as<T>(),
    *v = call.out[2].as<T>();
  int64_t count = param.numel();
  for (int64_t i = 0; i < count; ++i) {
    T g = grads[i] * inverse;
    p[i] *= keep;
    m[i] = b1 * m[i] + (1 - b1) * g;
    v[i] = b2 * v[i] + (1 - b2) * g * g;
    T denom = std::sqrt(v[i]) / bias2Sqrt + e;
    p[i] -= stepSize * (m[i] / denom);
  }
  if (master)
    std::copy(p, p + count, call.out[0].as<T>());
}

template <typename T> void sgd(const KernelCall &call) {
  const Tensor &param = call.in[0], &grad = call.in[1];
  T lr = call.f("lr"), momentum = call.f("momentum"),
    decay = call.f("weight_decay");
  bool nesterov = call.b("nesterov"), first = call.ctx.step == 0;
  // Inputs: (param, grad), the buffer when momentum != 0, then master,
  // then scaler and found_inf.
  bool buffer = momentum != 0;
  size_t extra = call.in.size() - (buffer ? 3 : 2);
  bool master = extra == 1 || extra == 3;
  LossScale scale = LossScale::of(call, extra >= 2);
  if (scale.skip)
    return;
  first = call.ctx.step - scale.skipped == 0;
  T inverse = T(scale.inverse);
  const T *g = grad.as<T>();
  T *p = call.out[master ? call.out.size() - 1 : 0].as<T>();
  T *buf = buffer ? call.out[1].as<T>() : nullptr;
  int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) {
    T d = g[i] * inverse + decay * p[i];
    if (buf) {
      buf[i] = first ? d : momentum * buf[i] + d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
  if (master)
    std::copy(p, p + n, call.out[0].as<T>());
}

/// 1.0 when any element of any input is not finite.
void foundInf(const KernelCall &call) {
  bool found = false;
  for (const Tensor &g : call.in)
    dispatchFloat(call, g.dtype, [&]<typename T>() {
      const T *x = g.as<T>();
      for (int64_t i = 0, n = g.numel(); i < n && !found; ++i)
        found = !std::isfinite(x[i]);
    });
  call.out[0].as<float>()[0] = found ? 1.0f : 0.0f;
}

/// torch.amp's _amp_update_scale_ on [scale, growth_tracker, skipped].
void updateLossScale(const KernelCall &call) {
  float *state = call.out[0].as<float>();
  if (call.in[1].as<float>()[0] != 0.0f) {
    state[0] = static_cast<float>(state[0] * call.f("backoff_factor"));
    state[1] = 0;
    state[2] += 1;
    return;
  }
  state[1] += 1;
  if (state[1] >= static_cast<float>(call.i("growth_interval"))) {
    state[0] = static_cast<float>(state[0] * call.f("growth_factor"));
    state[1] = 0;
  }
}

} // namespace

void registerOptimizerKernels(KernelTable &t) {
  t["found_inf"] = foundInf;
  t["update_loss_scale"] = updateLossScale;
  // Generic lambdas: the float or double instance for the parameter's dtype.
  t["adamw"] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { adamw<T>(c); });
  };
  // ZeRO's gathered parameter written back into its buffer.
  t["assign"] = [](const KernelCall &c) {
    if (c.out[0].data != c.in[1].data)
      std::memmove(c.out[0].data, c.in[1].data,
                   c.in[1].numel() * dtypeSize(c.in[1].dtype));
  };
  t["sgd"] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { sgd<T>(c); });
  };
}

} // namespace weft::rt
