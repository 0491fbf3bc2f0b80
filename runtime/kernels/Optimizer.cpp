//===- Optimizer.cpp - in-place parameter updates (AdamW, SGD) ------------===//
//
// torch.optim.AdamW / torch.optim.SGD step semantics (formulas on the ops,
// docs/generated/Dialects/Weft.md). The step number t = ctx.step + 1. The
// outputs alias the parameter and state inputs: updates are in place.
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"

#include <cmath>

namespace weft::rt {

namespace {

void adamw(const KernelCall &call) {
  const Tensor &param = call.in[0], &grad = call.in[1];
  if (param.dtype != DType::F32)
    call.unsupported(param.dtype);
  double lr = call.f("lr"), beta1 = call.f("beta1"), beta2 = call.f("beta2"),
         eps = call.f("eps"), decay = call.f("weight_decay");
  double t = static_cast<double>(call.ctx.step + 1);
  double bias1 = 1 - std::pow(beta1, t), bias2 = 1 - std::pow(beta2, t);
  // torch: step_size = lr / bias1; denom = sqrt(v) / sqrt(bias2) + eps.
  float stepSize = static_cast<float>(lr / bias1);
  float bias2Sqrt = static_cast<float>(std::sqrt(bias2));
  float keep = static_cast<float>(1 - lr * decay);
  float b1 = beta1, b2 = beta2, e = eps;
  const float *g = grad.as<float>();
  float *p = call.out[0].as<float>(), *m = call.out[1].as<float>(),
        *v = call.out[2].as<float>();
  for (int64_t i = 0, n = param.numel(); i < n; ++i) {
    p[i] *= keep;
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    float denom = std::sqrt(v[i]) / bias2Sqrt + e;
    p[i] -= stepSize * (m[i] / denom);
  }
}

void sgd(const KernelCall &call) {
  const Tensor &param = call.in[0], &grad = call.in[1];
  if (param.dtype != DType::F32)
    call.unsupported(param.dtype);
  float lr = call.f("lr"), momentum = call.f("momentum"),
        decay = call.f("weight_decay");
  bool nesterov = call.b("nesterov"), first = call.ctx.step == 0;
  const float *g = grad.as<float>();
  float *p = call.out[0].as<float>();
  float *buf = call.out.size() > 1 ? call.out[1].as<float>() : nullptr;
  for (int64_t i = 0, n = param.numel(); i < n; ++i) {
    float d = g[i] + decay * p[i];
    if (buf) {
      buf[i] = first ? d : momentum * buf[i] + d;
      d = nesterov ? d + momentum * buf[i] : buf[i];
    }
    p[i] -= lr * d;
  }
}

} // namespace

void registerOptimizerKernels(KernelTable &t) {
  t["adamw"] = adamw;
  t["sgd"] = sgd;
}

} // namespace weft::rt
