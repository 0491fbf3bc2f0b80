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

/// For each row of x (all dims but the last), the offset of its table row,
/// and the tables' stride along the last dim (0 when broadcast).
struct TableRows {
  std::vector<int64_t> offsets;
  int64_t step = 0;

  TableRows(const std::vector<int64_t> &table, const Tensor &input) {
    const std::vector<int64_t> &x = input.shape;
    std::vector<int64_t> strides = broadcastStrides(table, x);
    int64_t rank = int64_t(x.size()), d = x.back();
    step = strides.back();
    int64_t rows = d ? input.numel() / d : 0;
    offsets.resize(rows);
    std::vector<int64_t> idx(rank - 1, 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t off = 0;
      for (int64_t k = 0; k + 1 < rank; ++k)
        off += idx[k] * strides[k];
      offsets[r] = off;
      for (int64_t k = rank - 2; k >= 0; --k) {
        if (++idx[k] < x[k])
          break;
        idx[k] = 0;
      }
    }
  }
};

/// `Grad`: dx = dy cos - rotate(dy sin); else y = x cos + rotate(x) sin.
template <bool Grad> void rotary(const KernelCall &call) {
  const Tensor &x = call.in[0], &cos = call.in[1], &sin = call.in[2];
  bool interleaved = call.flag("interleaved");
  int64_t d = x.shape.back();
  TableRows table(cos.shape, x);
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    const T *px = x.as<T>(), *pc = cos.as<T>(), *ps = sin.as<T>();
    T *py = call.out[0].as<T>();
    for (int64_t r = 0; r < int64_t(table.offsets.size()); ++r) {
      const T *row = px + r * d, *c = pc + table.offsets[r],
              *s = ps + table.offsets[r];
      T *out = py + r * d;
      for (int64_t j = 0; j < d; ++j) {
        RotaryPartner p = rotaryPartner(j, d, interleaved);
        double v = double(row[j]) * double(c[j * table.step]);
        if constexpr (Grad)
          v -= p.sign * double(row[p.index]) * double(s[p.index * table.step]);
        else
          v += p.sign * double(row[p.index]) * double(s[j * table.step]);
        out[j] = static_cast<T>(v);
      }
    }
  });
}

} // namespace

void registerRotaryKernels(KernelTable &t) {
  t[Op::Rotary] = rotary<false>;
  t[Op::RotaryGrad] = rotary<true>;
}

} // namespace weft::rt
