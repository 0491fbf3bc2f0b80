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

#include "CpuVector.h"
#include "Kernel.h"
#include "UpdateMath.h"

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

/// AdamW over n elements in a vector loop (CpuVector.h): sqrt and the
/// divisions vectorise (the kernels build without errno from libm).
template <typename T>
WEFT_CPU_CLONES void adamwLoop(AdamWStep<T> step, const T *g, T *p, T *m, T *v,
                               int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    step(g[i], p[i], m[i], v[i]);
}

template <typename T> void adamw(const KernelCall &call) {
  UpdateInputs inputs = UpdateInputs::adamw(call.in.size());
  LossScale scale = LossScale::of(call, inputs.scaled);
  if (scale.skip)
    return;
  auto step = AdamWStep<T>::at(
      double(call.ctx.step + 1 - scale.skipped), call.f("lr"),
      call.f("beta1"), call.f("beta2"), call.f("eps"),
      call.f("weight_decay"), scale.inverse);
  const T *g = call.in[1].as<T>();
  T *p = call.out[inputs.master ? 3 : 0].as<T>(), *m = call.out[1].as<T>(),
    *v = call.out[2].as<T>();
  int64_t n = call.in[0].numel();
  adamwLoop(step, g, p, m, v, n);
  if (inputs.master)
    std::copy(p, p + n, call.out[0].as<T>());
}

template <typename T> void sgd(const KernelCall &call) {
  bool buffer = call.f("momentum") != 0;
  UpdateInputs inputs = UpdateInputs::sgd(call.in.size(), buffer);
  LossScale scale = LossScale::of(call, inputs.scaled);
  if (scale.skip)
    return;
  SgdStep<T> step{T(call.f("lr")), T(call.f("momentum")),
                  T(call.f("weight_decay")), T(scale.inverse),
                  call.b("nesterov"), call.ctx.step - scale.skipped == 0};
  const T *g = call.in[1].as<T>();
  T *p = call.out[inputs.master ? call.out.size() - 1 : 0].as<T>();
  T *buf = buffer ? call.out[1].as<T>() : nullptr;
  int64_t n = call.in[0].numel();
  for (int64_t i = 0; i < n; ++i)
    step(g[i], p[i], buf ? buf + i : nullptr);
  if (inputs.master)
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

void lossScaleUpdate(const KernelCall &call) {
  updateLossScale(call.out[0].as<float>(), call.in[1].as<float>()[0] != 0,
                  call.f("growth_factor"), call.f("backoff_factor"),
                  call.i("growth_interval"));
}

} // namespace

void registerOptimizerKernels(KernelTable &t) {
  t[Op::FoundInf] = foundInf;
  t[Op::UpdateLossScale] = lossScaleUpdate;
  // Generic lambdas: the float or double instance for the parameter's dtype.
  t[Op::AdamW] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { adamw<T>(c); });
  };
  // ZeRO's gathered parameter written back into its buffer.
  t[Op::Assign] = [](const KernelCall &c) {
    if (c.out[0].data != c.in[1].data)
      std::memmove(c.out[0].data, c.in[1].data,
                   c.in[1].numel() * dtypeSize(c.in[1].dtype));
  };
  t[Op::SGD] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { sgd<T>(c); });
  };
}

} // namespace weft::rt
