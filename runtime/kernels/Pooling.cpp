//===- Pooling.cpp - N-d max and average pooling (ONNX MaxPool/AveragePool)
//===//

#include "Kernel.h"

#include <limits>

namespace weft::rt {

namespace {

template <bool Max> void pool(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  std::vector<int64_t> kernel = call.ints("kernel_shape"),
                       strides = call.ints("strides"), pads = call.ints("pads");
  std::vector<int64_t> dilations =
      Max ? call.ints("dilations") : std::vector<int64_t>(kernel.size(), 1);
  bool includePad = !Max && call.b("count_include_pad");
  int64_t n = kernel.size(), planes = x.shape[0] * x.shape[1];
  std::vector<int64_t> in(x.shape.begin() + 2, x.shape.end()),
      out(y.shape.begin() + 2, y.shape.end());
  std::vector<int64_t> inStrides = stridesOf(in);
  int64_t inSize = 1, outSize = 1, kernelSize = 1;
  for (int64_t d = 0; d < n; ++d) {
    inSize *= in[d];
    outSize *= out[d];
    kernelSize *= kernel[d];
  }
  dispatchNumeric(call, x.dtype, [&]<typename T>() {
    for (int64_t p = 0; p < planes; ++p) {
      const T *src = x.as<T>() + p * inSize;
      T *dst = y.as<T>() + p * outSize;
      std::vector<int64_t> o(n, 0);
      for (int64_t oi = 0; oi < outSize; ++oi) {
        double acc = Max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0;
        std::vector<int64_t> k(n, 0);
        for (int64_t ki = 0; ki < kernelSize; ++ki) {
          int64_t flat = 0;
          bool inside = true, inPadded = true;
          for (int64_t d = 0; d < n; ++d) {
            int64_t pos = o[d] * strides[d] - pads[d] + k[d] * dilations[d];
            inside &= pos >= 0 && pos < in[d];
            // count_include_pad counts padding, not the overhang of ceil_mode.
            inPadded &= pos >= -pads[d] && pos < in[d] + pads[d + n];
            flat += pos * inStrides[d];
          }
          if (inside) {
            acc = Max ? std::max(acc, static_cast<double>(src[flat]))
                      : acc + src[flat];
            ++count;
          } else if (includePad && inPadded) {
            ++count;
          }
          for (int64_t d = n - 1; d >= 0; --d) {
            if (++k[d] < kernel[d])
              break;
            k[d] = 0;
          }
        }
        dst[oi] = static_cast<T>(Max ? acc : (count ? acc / count : 0.0));
        for (int64_t d = n - 1; d >= 0; --d) {
          if (++o[d] < out[d])
            break;
          o[d] = 0;
        }
      }
    }
  });
}

} // namespace

void registerPoolingKernels(KernelTable &t) {
  t["max_pool"] = pool<true>;
  t["avg_pool"] = pool<false>;
}

} // namespace weft::rt
