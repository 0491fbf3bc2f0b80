//===- Rotary.cpp - rotary position embeddings on the CPU -----------------===//
//
// rotary and rotary_grad (WeftOps.td, RotaryOp): y = x cos + rotate(x) sin
// and dx = dy cos - rotate(dy sin), row by row over the last dim, the
// tables broadcast to x (numpy's rule), the rotation RowMath.h's (shared
// with the CUDA kernels). Math in double, rounded once.
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"
#include "RowMath.h"

namespace weft::rt {

namespace {

/// `Grad`: dx = dy cos - rotate(dy sin); else y = x cos + rotate(x) sin.
template <bool Grad> void rotary(const KernelCall &call) {
  const Tensor &x = call.in[0], &cos = call.in[1], &sin = call.in[2];
  bool interleaved = call.flag("interleaved");
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *px = x.as<T>(), *pc = cos.as<T>(), *ps = sin.as<T>();
    T *py = call.out[0].as<T>();
    // Rows of the last dim: x's at o, the tables' at base with `step`.
    forEachRow<1>(
        x.shape, {broadcastStrides(cos.shape, x.shape)},
        [&](int64_t o, const auto &base, int64_t d, const auto &step) {
          const T *row = px + o, *c = pc + base[0], *s = ps + base[0];
          for (int64_t j = 0; j < d; ++j) {
            RotaryPartner p = rotaryPartner(j, d, interleaved);
            double v = double(row[j]) * double(c[j * step[0]]);
            if constexpr (Grad)
              v -= p.sign * double(row[p.index]) * double(s[p.index * step[0]]);
            else
              v += p.sign * double(row[p.index]) * double(s[j * step[0]]);
            py[o + j] = static_cast<T>(v);
          }
        });
  });
}

} // namespace

void registerRotaryKernels(KernelTable &t) {
  t[Op::Rotary] = rotary<false>;
  t[Op::RotaryGrad] = rotary<true>;
}

} // namespace weft::rt
