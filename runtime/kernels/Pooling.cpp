//===- Pooling.cpp - N-d max and average pooling (MaxPool, AveragePool) --===//

#include "Kernel.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace weft::rt {

namespace {

/// Visits every (output position, window element) pair of one plane:
/// fn(outIndex, inIndex or -1 in padding, inPaddedRegion).
struct PoolWindow {
  std::vector<int64_t> in, out, kernel, strides, pads, dilations;
  int64_t inSize = 1, outSize = 1;

  PoolWindow(const KernelCall &call, const Tensor &x, const Tensor &y,
             bool max) {
    kernel = call.ints("kernel_shape");
    strides = call.ints("strides");
    pads = call.ints("pads");
    dilations =
        max ? call.ints("dilations") : std::vector<int64_t>(kernel.size(), 1);
    in.assign(x.shape.begin() + 2, x.shape.end());
    out.assign(y.shape.begin() + 2, y.shape.end());
    for (int64_t d : in)
      inSize *= d;
    for (int64_t d : out)
      outSize *= d;
  }

  template <typename Fn> void forEachWindow(Fn &&fn) const {
    if (kernel.size() == 2)
      return forEachWindow2d(fn);
    int64_t n = kernel.size(), kernelSize = 1;
    for (int64_t k : kernel)
      kernelSize *= k;
    // The odometers are reset, not reallocated: this runs per element.
    std::vector<int64_t> inStrides = stridesOf(in), o(n, 0), k(n, 0);
    for (int64_t oi = 0; oi < outSize; ++oi) {
      std::fill(k.begin(), k.end(), 0);
      for (int64_t ki = 0; ki < kernelSize; ++ki) {
        int64_t flat = 0;
        bool inside = true, inPadded = true;
        for (int64_t d = 0; d < n; ++d) {
          int64_t pos = o[d] * strides[d] - pads[d] + k[d] * dilations[d];
          inside &= pos >= 0 && pos < in[d];
          // count_include_pad counts padding, not ceil_mode's overhang.
          inPadded &= pos >= -pads[d] && pos < in[d] + pads[d + n];
          flat += pos * inStrides[d];
        }
        fn(oi, inside ? flat : -1, inPadded);
        for (int64_t d = n - 1; d >= 0; --d) {
          if (++k[d] < kernel[d])
            break;
          k[d] = 0;
        }
      }
      for (int64_t d = n - 1; d >= 0; --d) {
        if (++o[d] < out[d])
          break;
        o[d] = 0;
      }
    }
  }

  /// forEachWindow over 2-D planes (images): the same visits in the same
  /// order, the positions counted row by row.
  template <typename Fn> void forEachWindow2d(Fn &&fn) const {
    for (int64_t oy = 0, oi = 0; oy < out[0]; ++oy)
      for (int64_t ox = 0; ox < out[1]; ++ox, ++oi)
        for (int64_t ky = 0; ky < kernel[0]; ++ky) {
          int64_t y = oy * strides[0] - pads[0] + ky * dilations[0];
          bool rowInside = y >= 0 && y < in[0];
          bool rowPadded = y >= -pads[0] && y < in[0] + pads[2];
          for (int64_t kx = 0; kx < kernel[1]; ++kx) {
            int64_t x = ox * strides[1] - pads[1] + kx * dilations[1];
            bool inside = rowInside && x >= 0 && x < in[1];
            fn(oi, inside ? y * in[1] + x : -1,
               rowPadded && x >= -pads[1] && x < in[1] + pads[3]);
          }
        }
  }
};

template <bool Max> void pool(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  PoolWindow w(call, x, y, Max);
  bool includePad = !Max && call.b("count_include_pad");
  int64_t planes = x.shape[0] * x.shape[1];
  dispatchNumeric(call, x.dtype, [&]<typename T>() {
    std::vector<double> acc(w.outSize);
    std::vector<int64_t> count(w.outSize);
    for (int64_t p = 0; p < planes; ++p) {
      const T *src = x.as<T>() + p * w.inSize;
      T *dst = y.as<T>() + p * w.outSize;
      std::fill(acc.begin(), acc.end(),
                Max ? -std::numeric_limits<double>::infinity() : 0.0);
      std::fill(count.begin(), count.end(), 0);
      w.forEachWindow([&](int64_t o, int64_t i, bool inPadded) {
        if (i >= 0) {
          acc[o] = Max ? std::max(acc[o], static_cast<double>(src[i]))
                       : acc[o] + src[i];
          ++count[o];
        } else if (includePad && inPadded) {
          ++count[o];
        }
      });
      for (int64_t o = 0; o < w.outSize; ++o)
        dst[o] =
            static_cast<T>(Max ? acc[o] : (count[o] ? acc[o] / count[o] : 0.0));
    }
  });
}

/// The input gradient: max routes dy to the first maximum of each window
/// (as torch), average spreads dy / count over the window.
template <bool Max> void poolGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  PoolWindow w(call, x, dy, Max);
  bool includePad = !Max && call.b("count_include_pad");
  int64_t planes = x.shape[0] * x.shape[1];
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    // Per window: max's first maximum (an index into the plane), average's
    // element count.
    std::vector<int64_t> where(Max ? w.outSize : 0), count(Max ? 0 : w.outSize);
    std::memset(dx.data, 0, dx.bytes());
    for (int64_t p = 0; p < planes; ++p) {
      const T *src = x.as<T>() + p * w.inSize, *g = dy.as<T>() + p * w.outSize;
      T *dst = dx.as<T>() + p * w.inSize;
      if constexpr (Max) {
        std::fill(where.begin(), where.end(), -1);
        w.forEachWindow([&](int64_t o, int64_t i, bool) {
          if (i >= 0 && (where[o] < 0 || src[i] > src[where[o]]))
            where[o] = i;
        });
        for (int64_t o = 0; o < w.outSize; ++o)
          if (where[o] >= 0)
            dst[where[o]] += g[o];
      } else {
        std::fill(count.begin(), count.end(), 0);
        w.forEachWindow([&](int64_t o, int64_t i, bool inPadded) {
          if (i >= 0 || (includePad && inPadded))
            ++count[o];
        });
        w.forEachWindow([&](int64_t o, int64_t i, bool) {
          if (i >= 0 && count[o])
            dst[i] += static_cast<T>(g[o] / static_cast<double>(count[o]));
        });
      }
    }
  });
}

} // namespace

void registerPoolingKernels(KernelTable &t) {
  t[Op::MaxPool] = pool<true>;
  t[Op::AvgPool] = pool<false>;
  t[Op::MaxPoolGrad] = poolGrad<true>;
  t[Op::AvgPoolGrad] = poolGrad<false>;
}

} // namespace weft::rt
