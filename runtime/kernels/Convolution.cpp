//===- Convolution.cpp - N-d grouped conv and conv_transpose --------------===//
//
// conv: im2col + GEMM per (image, group). conv_transpose: GEMM + col2im, the
// adjoint of the same mapping. Window geometry follows ONNX Conv-11 /
// ConvTranspose-11 with explicit pads [begin..., end...]. float and double.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Kernel.h"

#include <cstring>

namespace weft::rt {

namespace {

/// Geometry of one convolution: `image` is the spatial extent of the side
/// that is strided over (the conv input), `cols` that of the other side.
struct Window {
  std::vector<int64_t> image, cols, kernel, strides, pads, dilations;
  int64_t spatial() const { return kernel.size(); }
  int64_t kernelSize() const {
    int64_t n = 1;
    for (int64_t k : kernel)
      n *= k;
    return n;
  }
  int64_t colsSize() const {
    int64_t n = 1;
    for (int64_t c : cols)
      n *= c;
    return n;
  }
  int64_t imageSize() const {
    int64_t n = 1;
    for (int64_t c : image)
      n *= c;
    return n;
  }

  /// Calls fn(kernelIndex, colIndex, imageIndex or -1 when in padding) for
  /// every (kernel offset, output position) pair.
  template <typename Fn> void forEach(Fn &&fn) const {
    int64_t n = spatial();
    std::vector<int64_t> k(n, 0);
    std::vector<int64_t> imageStrides = stridesOf(image);
    for (int64_t ki = 0, kn = kernelSize(); ki < kn; ++ki) {
      std::vector<int64_t> c(n, 0);
      for (int64_t ci = 0, cn = colsSize(); ci < cn; ++ci) {
        int64_t flat = 0;
        bool inside = true;
        for (int64_t d = 0; d < n; ++d) {
          int64_t pos = c[d] * strides[d] - pads[d] + k[d] * dilations[d];
          inside &= pos >= 0 && pos < image[d];
          flat += pos * imageStrides[d];
        }
        fn(ki, ci, inside ? flat : -1);
        for (int64_t d = n - 1; d >= 0; --d) {
          if (++c[d] < cols[d])
            break;
          c[d] = 0;
        }
      }
      for (int64_t d = n - 1; d >= 0; --d) {
        if (++k[d] < kernel[d])
          break;
        k[d] = 0;
      }
    }
  }
};

Window window(const KernelCall &call, const std::vector<int64_t> &image,
              const std::vector<int64_t> &cols,
              const std::vector<int64_t> &kernel) {
  Window w;
  w.image = image;
  w.cols = cols;
  w.kernel = kernel;
  w.strides = call.ints("strides");
  w.pads = call.ints("pads");
  w.dilations = call.ints("dilations");
  if (w.dilations.empty())
    w.dilations.assign(w.kernel.size(), 1);
  return w;
}

/// im2col of `channels` consecutive planes starting at `planes`: row
/// (channel, kernel offset), column = output position; padding reads 0.
template <typename T>
void im2col(const Window &w, const T *planes, int64_t channels, T *buffer) {
  int64_t cols = w.colsSize(), image = w.imageSize();
  for (int64_t ch = 0; ch < channels; ++ch) {
    const T *plane = planes + ch * image;
    T *rows = buffer + ch * w.kernelSize() * cols;
    w.forEach([&](int64_t ki, int64_t ci, int64_t src) {
      rows[ki * cols + ci] = src >= 0 ? plane[src] : T(0);
    });
  }
}

template <typename T>
void addBias(const KernelCall &call, const Tensor &y, int64_t biasInput) {
  if ((int64_t)call.in.size() <= biasInput)
    return;
  const T *bias = call.in[biasInput].as<T>();
  int64_t n = y.shape[0], m = y.shape[1], plane = y.numel() / (n * m);
  T *out = y.as<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < m; ++c)
      for (int64_t i = 0; i < plane; ++i)
        out[(b * m + c) * plane + i] += bias[c];
}

template <typename T> void conv(const KernelCall &call) {
  const Tensor &x = call.in[0], &weight = call.in[1], &y = call.out[0];
  int64_t group = call.i("group");
  int64_t n = x.shape[0], c = x.shape[1], m = y.shape[1];
  int64_t cg = c / group, mg = m / group;
  Window w = window(call, {x.shape.begin() + 2, x.shape.end()},
                    {y.shape.begin() + 2, y.shape.end()},
                    {weight.shape.begin() + 2, weight.shape.end()});
  int64_t k = cg * w.kernelSize(), cols = w.colsSize(), image = w.imageSize();
  std::vector<T> buffer(k * cols);
  const T *in = x.as<T>(), *wt = weight.as<T>();
  T *out = y.as<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < group; ++g) {
      im2col(w, in + (b * c + g * cg) * image, cg, buffer.data());
      gemm<T>(false, false, mg, cols, k, 1, wt + g * mg * k, k, buffer.data(),
              cols, 0, out + (b * m + g * mg) * cols, cols);
    }
  addBias<T>(call, y, 2);
}

template <typename T> void convTranspose(const KernelCall &call) {
  const Tensor &x = call.in[0], &weight = call.in[1], &y = call.out[0];
  int64_t group = call.i("group");
  int64_t n = x.shape[0], c = x.shape[1], m = y.shape[1];
  int64_t cg = c / group, mg = m / group;
  // The output is the "image" strided over; the input supplies the columns.
  Window w = window(call, {y.shape.begin() + 2, y.shape.end()},
                    {x.shape.begin() + 2, x.shape.end()},
                    {weight.shape.begin() + 2, weight.shape.end()});
  int64_t k = mg * w.kernelSize(), cols = w.colsSize(), image = w.imageSize();
  std::vector<T> buffer(k * cols);
  const T *in = x.as<T>(), *wt = weight.as<T>();
  T *out = y.as<T>();
  std::memset(out, 0, y.bytes());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < group; ++g) {
      // cols = W_g^T [mg*K, cg] x X_g [cg, positions]
      gemm<T>(true, false, k, cols, cg, 1, wt + g * cg * k, k,
              in + (b * c + g * cg) * cols, cols, 0, buffer.data(), cols);
      for (int64_t ch = 0; ch < mg; ++ch) {
        T *plane = out + (b * m + g * mg + ch) * image;
        const T *rows = buffer.data() + ch * w.kernelSize() * cols;
        w.forEach([&](int64_t ki, int64_t ci, int64_t dst) {
          if (dst >= 0)
            plane[dst] += rows[ki * cols + ci];
        });
      }
    }
  addBias<T>(call, y, 2);
}

/// dW_g = sum over images of dY_g [M/g, positions] x im2col(x)_g^T.
template <typename T> void convWeightGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dw = call.out[0];
  int64_t group = call.i("group");
  int64_t n = x.shape[0], c = x.shape[1], m = dy.shape[1];
  int64_t cg = c / group, mg = m / group;
  Window w =
      window(call, {x.shape.begin() + 2, x.shape.end()},
             {dy.shape.begin() + 2, dy.shape.end()}, call.ints("kernel_shape"));
  int64_t k = cg * w.kernelSize(), cols = w.colsSize(), image = w.imageSize();
  std::vector<T> buffer(k * cols);
  const T *in = x.as<T>(), *g = dy.as<T>();
  T *out = dw.as<T>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t gi = 0; gi < group; ++gi) {
      im2col(w, in + (b * c + gi * cg) * image, cg, buffer.data());
      gemm<T>(false, true, mg, k, cols, 1, g + (b * m + gi * mg) * cols, cols,
              buffer.data(), cols, b == 0 ? 0 : 1, out + gi * mg * k, k);
    }
}

} // namespace

void registerConvolutionKernels(KernelTable &t) {
  // Generic lambdas: the float or double instance for the input's dtype.
  t["conv"] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { conv<T>(c); });
  };
  t["conv_transpose"] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { convTranspose<T>(c); });
  };
  t["conv_weight_grad"] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype,
                  [&]<typename T>() { convWeightGrad<T>(c); });
  };
}

} // namespace weft::rt
