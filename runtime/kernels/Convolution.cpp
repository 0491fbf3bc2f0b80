//===- Convolution.cpp - N-d grouped conv and conv_transpose --------------===//
//
// conv: im2col + GEMM per group over tiles of the batch's positions (small
// images side by side, a large one by output rows). conv_transpose: GEMM +
// col2im, the adjoint of the same mapping. Window geometry follows ONNX Conv-11
// / ConvTranspose-11 with explicit pads [begin..., end...]. float and double.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Kernel.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

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
    std::vector<int64_t> k(n, 0), c(n, 0);
    std::vector<int64_t> imageStrides = stridesOf(image);
    for (int64_t ki = 0, kn = kernelSize(); ki < kn; ++ki) {
      std::fill(c.begin(), c.end(), 0);
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

/// The output columns [lo, hi) whose input position col * stride + shift
/// lies in [0, extent): one dimension of a 2-D window, as a range, so the
/// copies below need no per-element bounds test.
struct ValidRange {
  int64_t lo, hi;
  ValidRange(int64_t cols, int64_t extent, int64_t stride, int64_t shift) {
    lo = shift >= 0 ? 0 : (-shift + stride - 1) / stride;
    hi = extent - 1 - shift < 0 ? 0 : (extent - 1 - shift) / stride + 1;
    lo = std::min(lo, cols);
    hi = std::max(lo, std::min(hi, cols));
  }
};

/// Visits the rows of a 2-D im2col: fn(at, input, shift, range) for each
/// (channel, kernel row, kernel column, output row in [r0, r1)): `at` is
/// where the output row's columns start in the matrix, `input` the input row
/// they read (null where the whole row reads padding): column c reads input[c *
/// stride + shift] for c in `range`, padding elsewhere.
template <typename T, typename Fn>
void forEachRow2d(const Window &w, T *planes, int64_t channels, int64_t ld,
                  int64_t r0, int64_t r1, Fn &&fn) {
  int64_t h = w.image[0], width = w.image[1], ow = w.cols[1];
  int64_t kh = w.kernel[0], kw = w.kernel[1];
  for (int64_t ch = 0; ch < channels; ++ch) {
    T *plane = planes + ch * h * width;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        int64_t row = (ch * kh + i) * kw + j;
        int64_t shift = j * w.dilations[1] - w.pads[1];
        ValidRange range(ow, width, w.strides[1], shift);
        for (int64_t r = r0; r < r1; ++r) {
          int64_t y = r * w.strides[0] - w.pads[0] + i * w.dilations[0];
          bool inside = y >= 0 && y < h;
          fn(row * ld + (r - r0) * ow, inside ? plane + y * width : nullptr,
             shift, range);
        }
      }
  }
}

/// im2col of `channels` consecutive planes starting at `planes`: row
/// (channel, kernel offset) at `buffer + row * ld`, column = output
/// position; padding reads 0. 2-D windows copy clipped runs of input rows,
/// for the output rows `rows` (a Tile's); other windows take every output.
template <typename T>
void im2col(const Window &w, const T *planes, int64_t channels, T *buffer,
            int64_t ld, std::pair<int64_t, int64_t> rows) {
  if (w.spatial() == 2) {
    int64_t ow = w.cols[1], stride = w.strides[1];
    forEachRow2d(
        w, planes, channels, ld, rows.first, rows.second,
        [&](int64_t at, const T *input, int64_t shift, ValidRange range) {
          T *out = buffer + at;
          if (!input) {
            std::fill(out, out + ow, T(0));
            return;
          }
          std::fill(out, out + range.lo, T(0));
          if (stride == 1) // a run of the input row
            std::copy(input + range.lo + shift, input + range.hi + shift,
                      out + range.lo);
          else
            for (int64_t c = range.lo; c < range.hi; ++c)
              out[c] = input[c * stride + shift];
          std::fill(out + range.hi, out + ow, T(0));
        });
    return;
  }
  int64_t image = w.imageSize();
  for (int64_t ch = 0; ch < channels; ++ch) {
    const T *plane = planes + ch * image;
    T *rows = buffer + ch * w.kernelSize() * ld;
    w.forEach([&](int64_t ki, int64_t ci, int64_t src) {
      rows[ki * ld + ci] = src >= 0 ? plane[src] : T(0);
    });
  }
}

/// col2im: the adjoint of im2col, adding each column entry into the plane
/// position it was read from (padding drops).
template <typename T>
void col2imAdd(const Window &w, const T *buffer, int64_t ld, int64_t channels,
               T *planes, std::pair<int64_t, int64_t> rows) {
  if (w.spatial() == 2) {
    int64_t stride = w.strides[1];
    forEachRow2d(w, planes, channels, ld, rows.first, rows.second,
                 [&](int64_t at, T *output, int64_t shift, ValidRange range) {
                   if (!output)
                     return;
                   const T *in = buffer + at;
                   if (stride == 1) { // a run of the output row
                     T *run = output + shift;
                     for (int64_t c = range.lo; c < range.hi; ++c)
                       run[c] += in[c];
                     return;
                   }
                   for (int64_t c = range.lo; c < range.hi; ++c)
                     output[c * stride + shift] += in[c];
                 });
    return;
  }
  int64_t image = w.imageSize();
  for (int64_t ch = 0; ch < channels; ++ch) {
    T *plane = planes + ch * image;
    const T *rows = buffer + ch * w.kernelSize() * ld;
    w.forEach([&](int64_t ki, int64_t ci, int64_t dst) {
      if (dst >= 0)
        plane[dst] += rows[ki * ld + ci];
    });
  }
}

/// A GEMM's columns: images [b, b + nb) side by side, or output rows
/// [r0, r1) of one image (nb 1). BLAS runs a GEMM at its speed once it is
/// some thousand columns wide, and the im2col matrix it reads is best kept
/// near the caches: a late layer's few positions per image are batched,
/// an early layer's many split by output rows (2-D windows).
struct Tile {
  int64_t b, nb, r0, r1;
  int64_t offset, part; ///< its first position in an image, its positions
  std::pair<int64_t, int64_t> rows() const { return {r0, r1}; }
  int64_t columns() const { return nb * part; } ///< the GEMM's N and ld
};
constexpr int64_t kTileColumns = 4096, kTileElements = int64_t(1) << 22;

/// The tiles of n images' output positions (a window's columns side: rows
/// of `ow` for 2-D windows, else each image whole) under an im2col of `k`
/// rows.
struct Tiling {
  std::vector<Tile> tiles;
  int64_t widest = 0;      ///< the most columns a tile has
  bool sideBySide = false; ///< whether a tile holds several images

  Tiling(const Window &w, int64_t n, int64_t k) {
    int64_t oh = w.spatial() == 2 ? w.cols[0] : 1, ow = w.colsSize() / oh;
    int64_t cols = oh * ow;
    int64_t width = std::max(ow, std::min(kTileColumns, kTileElements / k));
    auto add = [&](int64_t b, int64_t nb, int64_t r0, int64_t r1) {
      tiles.push_back({b, nb, r0, r1, r0 * ow, (r1 - r0) * ow});
      widest = std::max(widest, tiles.back().columns());
      sideBySide |= nb > 1;
    };
    if (cols <= width || oh == 1) {
      int64_t per = std::clamp<int64_t>(width / cols, 1, n);
      for (int64_t b = 0; b < n; b += per)
        add(b, std::min(per, n - b), 0, oh);
      return;
    }
    int64_t rows = std::max<int64_t>(1, width / ow);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t r = 0; r < oh; r += rows)
        add(b, 1, r, std::min(oh, r + rows));
  }
};

/// Channels [first, first + count) of a tile's images of a [N, C,
/// positions] tensor as one [count, tile columns] matrix (images side by
/// side), or back (`toImages`): copies `from` into `to`.
template <typename T>
void sideBySide(const Tile &t, int64_t channels, int64_t positions,
                int64_t first, int64_t count, const T *from, T *to,
                bool toImages) {
  for (int64_t i = 0; i < t.nb; ++i)
    for (int64_t r = 0; r < count; ++r) {
      int64_t image = ((t.b + i) * channels + first + r) * positions,
              row = r * t.columns() + i * positions;
      std::memcpy(to + (toImages ? image : row),
                  from + (toImages ? row : image), positions * sizeof(T));
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

/// y_g = W_g [M/g, K] x im2col(x_g) [K, a tile's positions].
template <typename T> void conv(const KernelCall &call) {
  const Tensor &x = call.in[0], &weight = call.in[1], &y = call.out[0];
  int64_t group = call.i("group");
  int64_t n = x.shape[0], c = x.shape[1], m = y.shape[1];
  int64_t cg = c / group, mg = m / group;
  Window w = window(call, {x.shape.begin() + 2, x.shape.end()},
                    {y.shape.begin() + 2, y.shape.end()},
                    {weight.shape.begin() + 2, weight.shape.end()});
  int64_t k = cg * w.kernelSize(), cols = w.colsSize(), image = w.imageSize();
  Tiling tiling(w, n, k);
  std::vector<T> buffer(k * tiling.widest),
      product(tiling.sideBySide ? mg * tiling.widest : 0);
  const T *in = x.as<T>(), *wt = weight.as<T>();
  T *out = y.as<T>();
  for (const Tile &t : tiling.tiles) {
    int64_t ld = t.columns();
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t i = 0; i < t.nb; ++i)
        im2col(w, in + ((t.b + i) * c + g * cg) * image, cg,
               buffer.data() + i * t.part, ld, t.rows());
      if (t.nb == 1) { // straight into the image's rows
        gemm<T>(false, false, mg, ld, k, 1, wt + g * mg * k, k, buffer.data(),
                ld, 0, out + (t.b * m + g * mg) * cols + t.offset, cols);
        continue;
      }
      gemm<T>(false, false, mg, ld, k, 1, wt + g * mg * k, k, buffer.data(), ld,
              0, product.data(), ld);
      sideBySide(t, m, cols, g * mg, mg, product.data(), out, true);
    }
  }
  addBias<T>(call, y, 2);
}

/// y_g = col2im(W_g^T [mg K, cg] x x_g [cg, a tile's positions]).
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
  Tiling tiling(w, n, k);
  std::vector<T> buffer(k * tiling.widest),
      inputs(tiling.sideBySide ? cg * tiling.widest : 0);
  const T *in = x.as<T>(), *wt = weight.as<T>();
  T *out = y.as<T>();
  std::memset(out, 0, y.bytes());
  for (const Tile &t : tiling.tiles) {
    int64_t ld = t.columns();
    for (int64_t g = 0; g < group; ++g) {
      // The tile's inputs: in place for one image, else side by side.
      const T *xg = in + (t.b * c + g * cg) * cols + t.offset;
      int64_t ldx = cols;
      if (t.nb > 1) {
        sideBySide(t, c, cols, g * cg, cg, in, inputs.data(), false);
        xg = inputs.data();
        ldx = ld;
      }
      gemm<T>(true, false, k, ld, cg, 1, wt + g * cg * k, k, xg, ldx, 0,
              buffer.data(), ld);
      for (int64_t i = 0; i < t.nb; ++i)
        col2imAdd(w, buffer.data() + i * t.part, ld, mg,
                  out + ((t.b + i) * m + g * mg) * image, t.rows());
    }
  }
  addBias<T>(call, y, 2);
}

/// dW_g = sum over tiles of dY_g [M/g, a tile's positions] x
/// im2col(x_g)^T.
template <typename T> void convWeightGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dw = call.out[0];
  int64_t group = call.i("group");
  int64_t n = x.shape[0], c = x.shape[1], m = dy.shape[1];
  int64_t cg = c / group, mg = m / group;
  Window w =
      window(call, {x.shape.begin() + 2, x.shape.end()},
             {dy.shape.begin() + 2, dy.shape.end()}, call.ints("kernel_shape"));
  int64_t k = cg * w.kernelSize(), cols = w.colsSize(), image = w.imageSize();
  Tiling tiling(w, n, k);
  std::vector<T> buffer(k * tiling.widest),
      grads(tiling.sideBySide ? mg * tiling.widest : 0);
  const T *in = x.as<T>(), *g = dy.as<T>();
  T *out = dw.as<T>();
  for (const Tile &t : tiling.tiles) {
    int64_t ld = t.columns();
    bool first = &t == &tiling.tiles[0];
    for (int64_t gi = 0; gi < group; ++gi) {
      for (int64_t i = 0; i < t.nb; ++i)
        im2col(w, in + ((t.b + i) * c + gi * cg) * image, cg,
               buffer.data() + i * t.part, ld, t.rows());
      // The tile's gradients: in place for one image, else side by side.
      const T *dyg = g + (t.b * m + gi * mg) * cols + t.offset;
      int64_t lddy = cols;
      if (t.nb > 1) {
        sideBySide(t, m, cols, gi * mg, mg, g, grads.data(), false);
        dyg = grads.data();
        lddy = ld;
      }
      gemm<T>(false, true, mg, k, ld, 1, dyg, lddy, buffer.data(), ld,
              first ? 0 : 1, out + gi * mg * k, k);
    }
  }
}

} // namespace

void registerConvolutionKernels(KernelTable &t) {
  // Generic lambdas: the float or double instance for the input's dtype.
  t[Op::Conv] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { conv<T>(c); });
  };
  t[Op::ConvTranspose] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { convTranspose<T>(c); });
  };
  t[Op::ConvWeightGrad] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype,
                  [&]<typename T>() { convWeightGrad<T>(c); });
  };
}

} // namespace weft::rt
