//===- ConvolutionKernelTest.cpp - conv and pooling fast paths ------------===//
//
// The CPU convolution and pooling kernels have fast paths for 2-D windows
// (im2col and col2im copying clipped runs of image rows; pooling windows
// without the N-d odometer), and tile a batch's positions into GEMMs: small
// images side by side, a large one by output rows. Each is checked against
// the path it shortcuts: a 2-D kernel against the same kernel in 3-D with
// a unit depth (the generic N-d code, whole images), a batch of small
// images against its images one at a time. f64, so both sides agree to
// rounding.
//
//===----------------------------------------------------------------------===//

#include "HostKernel.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

using namespace weft::rt;
using json = nlohmann::json;
using F64 = test::Host<double>;
using test::launch;

namespace {

F64 random(std::vector<int64_t> shape, unsigned seed) {
  F64 t(std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (double &v : t.v)
    v = dist(gen);
  return t;
}

/// `t` with a unit dim inserted at `axis`.
F64 withUnitDim(const F64 &t, size_t axis) {
  F64 out = t;
  out.shape.insert(out.shape.begin() + axis, 1);
  return out;
}

void expectNear(const F64 &got, const F64 &want, const std::string &what) {
  ASSERT_EQ(got.v.size(), want.v.size()) << what;
  for (size_t i = 0; i < got.v.size(); ++i)
    ASSERT_NEAR(got.v[i], want.v[i], 1e-12) << what << " element " << i;
}

/// One 2-D window: strides, pads [top, left, bottom, right], dilations.
struct Window2d {
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;

  /// ONNX Conv's output extent of an input extent along dim d.
  int64_t out(int64_t in, int64_t kernel, int d) const {
    int64_t span = (kernel - 1) * dilations[d] + 1;
    return (in + pads[d] + pads[d + 2] - span) / strides[d] + 1;
  }
  /// The attributes in 2-D, or in 3-D with a unit depth first.
  json attrs(bool depth, bool withGroup = true) const {
    std::vector<int64_t> s = strides, p = pads, d = dilations;
    if (depth) {
      s.insert(s.begin(), 1);
      d.insert(d.begin(), 1);
      p = {0, pads[0], pads[1], 0, pads[2], pads[3]};
    }
    json a = {{"strides", s}, {"pads", p}, {"dilations", d}};
    if (withGroup)
      a["group"] = group;
    return a;
  }
};

const std::vector<Window2d> kWindows = {
    {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1},  // ResNet's 3x3
    {{2, 2}, {1, 0, 2, 1}, {1, 1}, 1},  // strided, asymmetric pads
    {{2, 1}, {0, 2, 1, 0}, {2, 3}, 2},  // dilated, grouped
    {{3, 2}, {2, 2, 2, 2}, {1, 2}, 1},  // pads wider than the stride
    {{1, 1}, {0, 1, 2, 0}, {1, 1}, 1}}; // windows reaching the bottom pad

} // namespace

TEST(ConvolutionKernels, TwoDimensionalWindowsEqualTheGenericPath) {
  for (const Window2d &w : kWindows) {
    const int64_t n = 2, c = 4, m = 6, h = 9, width = 11, kh = 3, kw = 2;
    F64 x = random({n, c, h, width}, 1),
        wt = random({m, c / w.group, kh, kw}, 2);
    int64_t oh = w.out(h, kh, 0), ow = w.out(width, kw, 1);
    std::string what = "strides " + std::to_string(w.strides[0]) + "," +
                       std::to_string(w.strides[1]);

    F64 y({n, m, oh, ow}), y3({n, m, 1, oh, ow});
    launch("conv", {x, wt}, {y}, w.attrs(false));
    F64 x3 = withUnitDim(x, 2), wt3 = withUnitDim(wt, 2);
    launch("conv", {x3, wt3}, {y3}, w.attrs(true));
    y3.shape = y.shape; // [n, m, 1, oh, ow]: the same values
    expectNear(y, y3, "conv, " + what);

    F64 dy = random({n, m, oh, ow}, 3), dw({m, c / w.group, kh, kw}),
        dw3({m, c / w.group, 1, kh, kw});
    json grad = w.attrs(false), grad3 = w.attrs(true);
    grad["kernel_shape"] = {kh, kw};
    grad3["kernel_shape"] = {1, kh, kw};
    F64 dy3 = withUnitDim(dy, 2);
    launch("conv_weight_grad", {x, dy}, {dw}, grad);
    launch("conv_weight_grad", {x3, dy3}, {dw3}, grad3);
    dw3.shape = dw.shape;
    expectNear(dw, dw3, "conv_weight_grad, " + what);

    // conv's input gradient: conv_transpose of dy by the same weights,
    // its output padding what the strides' flooring dropped.
    std::vector<int64_t> extra = {
        h + w.pads[0] + w.pads[2] - ((kh - 1) * w.dilations[0] + 1) -
            (oh - 1) * w.strides[0],
        width + w.pads[1] + w.pads[3] - ((kw - 1) * w.dilations[1] + 1) -
            (ow - 1) * w.strides[1]};
    json t = w.attrs(false), t3 = w.attrs(true);
    t["output_padding"] = extra;
    t3["output_padding"] = {0, extra[0], extra[1]};
    F64 dx({n, c, h, width}), dx3({n, c, 1, h, width});
    launch("conv_transpose", {dy, wt}, {dx}, t);
    launch("conv_transpose", {dy3, wt3}, {dx3}, t3);
    dx3.shape = dx.shape;
    expectNear(dx, dx3, "conv_transpose, " + what);
  }
}

TEST(ConvolutionKernels, PoolingWindowsEqualTheGenericPath) {
  for (Window2d w : kWindows)
    for (const char *kind : {"max", "avg"}) {
      bool max = std::string(kind) == "max";
      if (!max) // AveragePool has no dilations
        w.dilations = {1, 1};
      const int64_t n = 2, c = 3, h = 9, width = 11, kh = 3, kw = 2;
      int64_t oh = w.out(h, kh, 0), ow = w.out(width, kw, 1);
      // Values in halves: windows hold ties, which max routes to the
      // first maximum.
      F64 x = random({n, c, h, width}, 4);
      for (double &v : x.v)
        v = std::round(v * 2) / 2;
      F64 x3 = withUnitDim(x, 2);
      F64 dy = random({n, c, oh, ow}, 5), dy3 = withUnitDim(dy, 2);
      json a = w.attrs(false, false), a3 = w.attrs(true, false);
      a["kernel_shape"] = {kh, kw};
      a3["kernel_shape"] = {1, kh, kw};
      if (!max)
        for (json *j : {&a, &a3}) {
          j->erase("dilations");
          (*j)["count_include_pad"] = true;
        }
      json forward = a, forward3 = a3;
      forward["ceil_mode"] = false;
      forward3["ceil_mode"] = false;
      F64 y({n, c, oh, ow}), y3({n, c, 1, oh, ow});
      launch(max ? "max_pool" : "avg_pool", {x}, {y}, forward);
      launch(max ? "max_pool" : "avg_pool", {x3}, {y3}, forward3);
      y3.shape = y.shape;
      expectNear(y, y3, std::string(kind) + "_pool");
      F64 dx({n, c, h, width}), dx3({n, c, 1, h, width});
      std::string grad = std::string(kind) + "_pool_grad";
      launch(grad.c_str(), {x, dy}, {dx}, a);
      launch(grad.c_str(), {x3, dy3}, {dx3}, a3);
      dx3.shape = dx.shape;
      expectNear(dx, dx3, grad);
    }
}

namespace {

/// conv, conv_transpose (conv's input gradient) and conv_weight_grad of
/// x [n, c, side, side] by 3x3 weights (stride 1, pad 1), in 2-D or in
/// 3-D with a unit depth: {y, dx, dw}.
std::array<F64, 3> convolutions(const F64 &x, const F64 &wt, const F64 &dy,
                                bool depth) {
  Window2d w{{1, 1}, {1, 1, 1, 1}, {1, 1}, 1};
  F64 xs = depth ? withUnitDim(x, 2) : x, ws = depth ? withUnitDim(wt, 2) : wt,
      dys = depth ? withUnitDim(dy, 2) : dy;
  json attrs = w.attrs(depth), grad = attrs, transpose = attrs;
  grad["kernel_shape"] =
      depth ? std::vector<int64_t>{1, 3, 3} : std::vector<int64_t>{3, 3};
  transpose["output_padding"] =
      depth ? std::vector<int64_t>{0, 0, 0} : std::vector<int64_t>{0, 0};
  F64 y(dys.shape), dx(xs.shape), dw(ws.shape);
  launch("conv", {xs, ws}, {y}, attrs);
  launch("conv_transpose", {dys, ws}, {dx}, transpose);
  launch("conv_weight_grad", {xs, dys}, {dw}, grad);
  for (F64 *t : {&y, &dx, &dw})
    if (depth)
      t->shape.erase(t->shape.begin() + 2);
  return {y, dx, dw};
}

} // namespace

TEST(ConvolutionKernels, BatchedImagesEqualTheirImagesOneByOne) {
  // 6 x 7 positions an image: the batch of 5 is one GEMM's columns.
  const int64_t n = 5, c = 8, m = 6;
  F64 x = random({n, c, 6, 7}, 6), wt = random({m, c, 3, 3}, 7),
      dy = random({n, m, 6, 7}, 8);
  auto [y, dx, dw] = convolutions(x, wt, dy, false);
  F64 sum(dw.shape);
  int64_t inPlane = c * 42, outPlane = m * 42;
  for (int64_t b = 0; b < n; ++b) {
    F64 xb({1, c, 6, 7},
           {x.v.begin() + b * inPlane, x.v.begin() + (b + 1) * inPlane});
    F64 dyb({1, m, 6, 7},
            {dy.v.begin() + b * outPlane, dy.v.begin() + (b + 1) * outPlane});
    auto [yb, dxb, dwb] = convolutions(xb, wt, dyb, false);
    for (int64_t i = 0; i < outPlane; ++i)
      ASSERT_NEAR(y.v[b * outPlane + i], yb.v[i], 1e-12) << "conv " << b;
    for (int64_t i = 0; i < inPlane; ++i)
      ASSERT_NEAR(dx.v[b * inPlane + i], dxb.v[i], 1e-12)
          << "conv_transpose " << b;
    for (size_t i = 0; i < sum.v.size(); ++i)
      sum.v[i] += dwb.v[i];
  }
  expectNear(dw, sum, "conv_weight_grad");
}

TEST(ConvolutionKernels, RowTilesEqualWholeImages) {
  // 100 x 100 positions an image: 2-D windows take 40 output rows a GEMM
  // (4096 columns), the 3-D path whole images.
  const int64_t n = 2, c = 16, m = 8, side = 100;
  F64 x = random({n, c, side, side}, 9), wt = random({m, c, 3, 3}, 10),
      dy = random({n, m, side, side}, 11);
  auto [y, dx, dw] = convolutions(x, wt, dy, false);
  auto [y3, dx3, dw3] = convolutions(x, wt, dy, true);
  expectNear(y, y3, "conv");
  expectNear(dx, dx3, "conv_transpose");
  // dW sums 2 x 10^4 positions' products: its rounding.
  for (size_t i = 0; i < dw.v.size(); ++i)
    ASSERT_NEAR(dw.v[i], dw3.v[i], 1e-10) << "conv_weight_grad " << i;
}

TEST(ConvolutionKernels, MaxPoolRoutesATieToItsFirstMaximum) {
  // torch's rule: the first maximum in the window's row order takes dy.
  F64 x({1, 1, 2, 3}, {1, 1, 0, 1, 1, 1}), dy({1, 1, 1, 2}, {2, 3}),
      dx(x.shape);
  launch("max_pool_grad", {x, dy}, {dx},
         {{"kernel_shape", {2, 2}},
          {"strides", {1, 1}},
          {"pads", {0, 0, 0, 0}},
          {"dilations", {1, 1}}});
  EXPECT_EQ(dx.v, (std::vector<double>{2, 3, 0, 0, 0, 0}));
}
