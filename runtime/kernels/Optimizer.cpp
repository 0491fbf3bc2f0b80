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

template <typename T> void adamw(const KernelCall &call) {
  const Tensor &param = call.in[0], &grad = call.in[1];
  double lr = call.f("lr"), beta1 = call.f("beta1"), beta2 = call.f("beta2"),
         eps = call.f("eps"), decay = call.f("weight_decay");
  double t = static_cast<double>(call.ctx.step + 1);
  double bias1 = 1 - std::pow(beta1, t), bias2 = 1 - std::pow(beta2, t);
  // torch: step_size = lr / bias1; denom = sqrt(v) / sqrt(bias2) + eps.
  T stepSize = static_cast<T>(lr / bias1);
  T bias2Sqrt = static_cast<T>(std::sqrt(bias2));
  T keep = static_cast<T>(1 - lr * decay);
  T b1 = beta1, b2 = beta2, e = eps;
  const T *g = grad.as<T>();
  bool master = call.in.size() == 5;
  T *p = call.out[master ? 3 : 0].as<T>(), *m = call.out[1].as<T>(),
    *v = call.out[2].as<T>();
  int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) {
    p[i] *= keep;
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    T denom = std::sqrt(v[i]) / bias2Sqrt + e;
    p[i] -= stepSize * (m[i] / denom);
  }
  if (master)
    std::copy(p, p + n, call.out[0].as<T>());
}

template <typename T> void sgd(const KernelCall &call) {
  const Tensor &param = call.in[0], &grad = call.in[1];
  T lr = call.f("lr"), momentum = call.f("momentum"),
    decay = call.f("weight_decay");
  bool nesterov = call.b("nesterov"), first = call.ctx.step == 0;
  bool buffer = momentum != 0;
  bool master = call.in.size() == (buffer ? 4u : 3u);
  const T *g = grad.as<T>();
  T *p = call.out[master ? call.out.size() - 1 : 0].as<T>();
  T *buf = buffer ? call.out[1].as<T>() : nullptr;
  int64_t n = param.numel();
  for (int64_t i = 0; i < n; ++i) {
    T d = g[i] + decay * p[i];
    if (buf) {
      buf[i] = first ? d : momentum * buf[i] + d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
  if (master)
    std::copy(p, p + n, call.out[0].as<T>());
}

} // namespace

void registerOptimizerKernels(KernelTable &t) {
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
