//===- Movement.cpp - transpose, expand, concat, split, slice, gather, pad,
//                     trilu, resize (nearest)
//                     -----------------------------===//
//
// Data movement is dtype-agnostic: elements are copied by size.
//
//===----------------------------------------------------------------------===//

#include "Half.h"
#include "Kernel.h"
#include "StridedView.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace weft::rt {

/// ONNX Resize-13, mode nearest: the input index of output coordinate `x`.
int64_t nearestSource(int64_t x, int64_t inLen, int64_t outLen, double scale,
                      const std::string &transform, const std::string &mode) {
  double orig;
  if (transform == "half_pixel")
    orig = (x + 0.5) / scale - 0.5;
  else if (transform == "pytorch_half_pixel")
    orig = outLen > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  else if (transform == "align_corners")
    orig = outLen > 1 ? x * double(inLen - 1) / (outLen - 1) : 0.0;
  else if (transform == "tf_half_pixel_for_nn")
    orig = (x + 0.5) / scale;
  else // asymmetric
    orig = x / scale;
  double rounded;
  if (mode == "floor")
    rounded = std::floor(orig);
  else if (mode == "ceil")
    rounded = std::ceil(orig);
  else if (orig - std::floor(orig) == 0.5)
    rounded = mode == "round_prefer_ceil" ? std::ceil(orig) : std::floor(orig);
  else
    rounded = std::round(orig);
  return std::clamp<int64_t>(static_cast<int64_t>(rounded), 0, inLen - 1);
}

/// Writes `value` converted to `dtype` into `out` (one element).
void storeScalar(char *out, DType dtype, double value) {
  switch (dtype) {
  case DType::F32: {
    float v = value;
    std::memcpy(out, &v, 4);
    return;
  }
  case DType::F64:
    std::memcpy(out, &value, 8);
    return;
  case DType::F16:
  case DType::BF16: {
    uint16_t v =
        dtype == DType::F16 ? toF16(float(value)) : toBF16(float(value));
    std::memcpy(out, &v, 2);
    return;
  }
  case DType::I64:
  case DType::U64: {
    int64_t v = value;
    std::memcpy(out, &v, 8);
    return;
  }
  case DType::I32:
  case DType::U32: {
    int32_t v = value;
    std::memcpy(out, &v, 4);
    return;
  }
  case DType::I16:
  case DType::U16: {
    int16_t v = value;
    std::memcpy(out, &v, 2);
    return;
  }
  default: {
    int8_t v = value;
    std::memcpy(out, &v, 1);
    return;
  }
  }
}

namespace {

/// out[o] = in[base + sum(idx[d] * strides[d])] over `outShape`.
void copyStrided(void *out, const void *in,
                 const std::vector<int64_t> &outShape,
                 const std::vector<int64_t> &strides, int64_t base,
                 int64_t elemSize) {
  std::array<std::vector<int64_t>, 1> s = {strides};
  auto run = [&](auto tag) {
    using E = decltype(tag);
    E *dst = static_cast<E *>(out);
    const E *src = static_cast<const E *>(in) + base;
    forEachBroadcast<1>(
        outShape, s, [&](int64_t o, const auto &off) { dst[o] = src[off[0]]; });
  };
  dispatchBySize(elemSize, run);
}

/// y[b, j, i] = x[b, i, j] for `batch` matrices of rows x cols elements, in
/// 32 x 32 tiles so that reads and writes both stay in cache lines.
void transposeMatrices(void *out, const void *in, int64_t batch, int64_t rows,
                       int64_t cols, int64_t elemSize) {
  constexpr int64_t kTile = 32;
  dispatchBySize(elemSize, [&](auto tag) {
    using E = decltype(tag);
    for (int64_t b = 0; b < batch; ++b) {
      const E *src = static_cast<const E *>(in) + b * rows * cols;
      E *dst = static_cast<E *>(out) + b * rows * cols;
      for (int64_t i0 = 0; i0 < rows; i0 += kTile)
        for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
          int64_t i1 = std::min(i0 + kTile, rows),
                  j1 = std::min(j0 + kTile, cols);
          for (int64_t i = i0; i < i1; ++i)
            for (int64_t j = j0; j < j1; ++j)
              dst[j * rows + i] = src[i * cols + j];
        }
    }
  });
}

void transpose(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  const std::vector<int64_t> &perm = call.ints("perm");
  std::vector<int64_t> strides = StridedView::transpose(x.shape, perm).strides;
  int64_t n = perm.size(), elemSize = dtypeSize(x.dtype);
  bool leadingKept = true;
  for (int64_t d = 0; d + 2 < n; ++d)
    leadingKept &= perm[d] == d;
  // The innermost axis stays innermost (attention's head split and merge,
  // [b, s, h, d] -> [b, h, s, d]): whole rows are contiguous, memcpy them.
  if (n >= 1 && perm[n - 1] == n - 1) {
    char *dst = y.as<char>();
    const char *src = x.as<char>();
    forEachRow<1>(y.shape, {strides},
                  [&](int64_t o, std::array<int64_t, 1> base, int64_t count,
                      const std::array<int64_t, 1> &) {
                    std::memcpy(dst + o * elemSize, src + base[0] * elemSize,
                                count * elemSize);
                  });
    return;
  }
  // The last two axes swap (matrix transposes in matmul gradients): tiles.
  if (n >= 2 && leadingKept && perm[n - 1] == n - 2 && perm[n - 2] == n - 1) {
    int64_t rows = x.shape[n - 2], cols = x.shape[n - 1];
    int64_t batch = rows * cols != 0 ? x.numel() / (rows * cols) : 0;
    transposeMatrices(y.data, x.data, batch, rows, cols, elemSize);
    return;
  }
  copyStrided(y.data, x.data, y.shape, strides, 0, elemSize);
}

void expand(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  StridedView v = StridedView::expand(x.shape, y.shape);
  copyStrided(y.data, x.data, y.shape, v.strides, v.base, dtypeSize(x.dtype));
}

void concat(const KernelCall &call) {
  const Tensor &y = call.out[0];
  int64_t axis = call.i("axis");
  int64_t outer = outerCount(y.shape, axis);
  int64_t outRow = outer ? y.bytes() / outer : 0, offset = 0;
  for (const Tensor &x : call.in) {
    int64_t row = outer ? x.bytes() / outer : 0;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.as<char>() + o * outRow + offset, x.as<char>() + o * row,
                  row);
    offset += row;
  }
}

void split(const KernelCall &call) {
  const Tensor &x = call.in[0];
  int64_t axis = call.i("axis");
  int64_t outer = outerCount(x.shape, axis);
  int64_t inRow = outer ? x.bytes() / outer : 0, offset = 0;
  for (const Tensor &y : call.out) {
    int64_t row = outer ? y.bytes() / outer : 0;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.as<char>() + o * row, x.as<char>() + o * inRow + offset,
                  row);
    offset += row;
  }
}

void slice(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  StridedView v = StridedView::slice(x.shape, y.shape, call.ints("starts"),
                                     call.ints("steps"));
  copyStrided(y.data, x.data, y.shape, v.strides, v.base, dtypeSize(x.dtype));
}

/// GatherElements-13: each element read by its own index (copied by size).
void gatherElements(const KernelCall &call) {
  const Tensor &data = call.in[0], &y = call.out[0];
  dispatchBySize(dtypeSize(data.dtype), [&](auto tag) {
    using E = decltype(tag);
    const E *in = data.as<E>();
    E *out = y.as<E>();
    forEachElementRead(call, call.in[1], data.shape, call.i("axis"),
                       [&](int64_t p, int64_t q) { out[p] = in[q]; });
  });
}

void gather(const KernelCall &call) {
  const Tensor &data = call.in[0], &indices = call.in[1], &y = call.out[0];
  int64_t axis = call.i("axis"), dim = data.shape[axis];
  int64_t outer = outerCount(data.shape, axis);
  int64_t row = dtypeSize(data.dtype);
  for (int64_t d = axis + 1; d < data.rank(); ++d)
    row *= data.shape[d];
  int64_t count = indices.numel();
  auto index = [&](int64_t k) -> int64_t {
    int64_t i = indices.dtype == DType::I64 ? indices.as<int64_t>()[k]
                                            : indices.as<int32_t>()[k];
    if (i < -dim || i >= dim)
      call.fail("index " + std::to_string(i) + " out of range for dim " +
                std::to_string(dim));
    return i < 0 ? i + dim : i;
  };
  const char *src = data.as<char>();
  char *dst = y.as<char>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < count; ++k)
      std::memcpy(dst + (o * count + k) * row, src + (o * dim + index(k)) * row,
                  row);
}

/// Row by row over the last dim: the fill, then the input row's overlap
/// with the output row (pads may be negative: a crop), then the fill.
/// Slice's gradient is a pad, so rotary embeddings' backward runs here.
void pad(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  std::vector<int64_t> pads = call.ints("pads");
  int64_t rank = x.rank(), size = dtypeSize(x.dtype);
  std::vector<char> fill(size);
  storeScalar(fill.data(), x.dtype, call.f("value"));
  bool zeroFill =
      std::all_of(fill.begin(), fill.end(), [](char c) { return c == 0; });
  auto fillRange = [&](char *out, int64_t n) {
    if (zeroFill) {
      std::memset(out, 0, n * size);
      return;
    }
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(out + j * size, fill.data(), size);
  };
  if (rank == 0) {
    std::memcpy(y.data, x.data, size);
    return;
  }
  int64_t last = rank - 1, wy = y.shape[last], wx = x.shape[last];
  int64_t begin = pads[last];
  int64_t j0 = std::clamp<int64_t>(begin, 0, wy),
          j1 = std::clamp<int64_t>(begin + wx, j0, wy);
  std::vector<int64_t> inStrides = stridesOf(x.shape), idx(rank, 0);
  char *dst = y.as<char>();
  const char *src = x.as<char>();
  int64_t rows = wy ? y.numel() / wy : 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t in = 0;
    bool inside = true;
    for (int64_t d = 0; d < last; ++d) {
      int64_t i = idx[d] - pads[d];
      inside &= i >= 0 && i < x.shape[d];
      in += i * inStrides[d];
    }
    char *out = dst + r * wy * size;
    if (!inside || j0 == j1) {
      fillRange(out, wy);
    } else {
      fillRange(out, j0);
      std::memcpy(out + j0 * size, src + (in + j0 - begin) * size,
                  (j1 - j0) * size);
      fillRange(out + j1 * size, wy - j1);
    }
    for (int64_t d = last - 1; d >= 0; --d) {
      if (++idx[d] < y.shape[d])
        break;
      idx[d] = 0;
    }
  }
}

void trilu(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  bool upper = call.b("upper");
  int64_t k = call.i("k"), size = dtypeSize(x.dtype);
  int64_t rows = x.shape[x.rank() - 2], cols = x.shape[x.rank() - 1];
  int64_t matrices = rows * cols != 0 ? x.numel() / (rows * cols) : 0;
  std::memcpy(y.data, x.data, x.bytes());
  char *out = y.as<char>();
  for (int64_t m = 0; m < matrices; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep)
          std::memset(out + ((m * rows + i) * cols + j) * size, 0, size);
      }
}

/// The source index of each output index along each dim of a nearest
/// resize (nearestSource: ONNX Resize-13's coordinate transforms).
std::vector<std::vector<int64_t>>
resizeSources(const KernelCall &call, const Tensor &x, const Tensor &y) {
  std::vector<double> scales = call.floats("scales");
  std::string transform = call.s("coordinate_transformation_mode");
  std::string mode = call.s("nearest_mode");
  std::vector<std::vector<int64_t>> source(x.rank());
  for (int64_t d = 0; d < x.rank(); ++d)
    for (int64_t i = 0; i < y.shape[d]; ++i)
      source[d].push_back(
          nearestSource(i, x.shape[d], y.shape[d], scales[d], transform, mode));
  return source;
}

/// Calls fn(out, in) for each row (last dim) of a resize's output `y`:
/// `out` its first element, `in` the input row it reads (where the outer
/// dims' sources meet); the row's elements read `in + source.back()[j]`.
template <typename Fn>
void forEachResizedRow(const std::vector<std::vector<int64_t>> &source,
                       const Tensor &x, const Tensor &y, Fn &&fn) {
  int64_t rank = y.rank(), width = rank ? y.shape.back() : 1;
  if (y.numel() == 0)
    return;
  std::vector<int64_t> inStrides = stridesOf(x.shape), idx(rank, 0);
  for (int64_t o = 0, n = y.numel(); o < n; o += width) {
    int64_t in = 0;
    for (int64_t d = 0; d + 1 < rank; ++d)
      in += source[d][idx[d]] * inStrides[d];
    fn(o, in);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++idx[d] < y.shape[d])
        break;
      idx[d] = 0;
    }
  }
}

void resize(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  std::vector<std::vector<int64_t>> source = resizeSources(call, x, y);
  const int64_t *cols = x.rank() ? source.back().data() : nullptr;
  int64_t width = x.rank() ? y.shape.back() : 1;
  // Copies elements by size: works for every dtype.
  dispatchBySize(dtypeSize(x.dtype), [&](auto tag) {
    using E = decltype(tag);
    const E *src = x.as<E>();
    E *dst = y.as<E>();
    forEachResizedRow(source, x, y, [&](int64_t out, int64_t in) {
      for (int64_t j = 0; j < width; ++j)
        dst[out + j] = src[in + (cols ? cols[j] : 0)];
    });
  });
}

/// The adjoint of resize: every output element adds its gradient to the
/// input element it was copied from.
void resizeGrad(const KernelCall &call) {
  const Tensor &x = call.in[0], &dy = call.in[1], &dx = call.out[0];
  std::vector<std::vector<int64_t>> source = resizeSources(call, x, dy);
  const int64_t *cols = x.rank() ? source.back().data() : nullptr;
  int64_t width = x.rank() ? dy.shape.back() : 1;
  dispatchFloat(call, x.dtype, [&]<typename T>() {
    T *out = dx.as<T>();
    const T *g = dy.as<T>();
    std::memset(out, 0, dx.bytes());
    forEachResizedRow(source, x, dy, [&](int64_t o, int64_t in) {
      for (int64_t j = 0; j < width; ++j)
        out[in + (cols ? cols[j] : 0)] += g[o + j];
    });
  });
}

} // namespace

void registerMovementKernels(KernelTable &t) {
  t[Op::ResizeGrad] = resizeGrad;
  t[Op::Transpose] = transpose;
  t[Op::Expand] = expand;
  t[Op::Concat] = concat;
  t[Op::Split] = split;
  t[Op::Slice] = slice;
  t[Op::Gather] = gather;
  t[Op::GatherElements] = gatherElements;
  t[Op::Pad] = pad;
  t[Op::Trilu] = trilu;
  t[Op::Resize] = resize;
}

} // namespace weft::rt
