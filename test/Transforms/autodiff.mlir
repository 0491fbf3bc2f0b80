// RUN: weft-opt %s --split-input-file --weft-autodiff | FileCheck %s

// Linear regression: loss = mean((x w + b - t)^2). Gradients: matmul by a
// 2-D weight -> dW = x^T dY as one gemm with transA (no transpose copy); bias add -> unbroadcast by reduce_sum; the mean ->
// expand scaled by 1/count; the square via pow's rule.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: -> (tensor<f32> {weft.output = "loss"}, tensor<3x1xf32> {weft.grad = "w"}, tensor<1xf32> {weft.grad = "b"})
// CHECK: %[[ONE:.*]] = weft.constant {weft.task = #weft.task<B>} dense<1.000000e+00> : tensor<f32>
// CHECK: %[[SCALE:.*]] = weft.constant {weft.task = #weft.task<B>} dense<1.250000e-01> : tensor<f32>
// CHECK: %[[DMEAN:.*]] = weft.mul %[[ONE]], %[[SCALE]]
// CHECK: weft.expand
// CHECK: weft.pow
// CHECK: %[[DB:.*]] = weft.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = true, weft.task = #weft.task<B>} : (tensor<8x1xf32>) -> tensor<1x1xf32>
// CHECK: %[[DBR:.*]] = weft.reshape %[[DB]] {shape = array<i64: 1>, weft.task = #weft.task<B>}
// CHECK-NOT: weft.transpose
// CHECK: %[[DW:.*]] = weft.gemm %arg0, %{{.*}} {beta = 0.000000e+00 : f64, transA = true, weft.task = #weft.task<B>} : (tensor<8x3xf32>, tensor<8x1xf32>) -> tensor<3x1xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DBR]]
func.func @linear(%x: tensor<8x3xf32> {weft.input = "x"}, %t: tensor<8x1xf32> {weft.input = "t"},
                  %w: tensor<3x1xf32> {weft.param = "w"}, %b: tensor<1xf32> {weft.param = "b"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %0 = weft.matmul %x, %w : (tensor<8x3xf32>, tensor<3x1xf32>) -> tensor<8x1xf32>
  %1 = weft.add %0, %b : (tensor<8x1xf32>, tensor<1xf32>) -> tensor<8x1xf32>
  %2 = weft.sub %1, %t : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %two = weft.constant dense<2.0> : tensor<f32>
  %3 = weft.pow %2, %two : (tensor<8x1xf32>, tensor<f32>) -> tensor<8x1xf32>
  %4 = weft.reduce_mean %3 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x1xf32>) -> tensor<f32>
  return %4 : tensor<f32>
}

// -----

// A value used twice accumulates both gradients; the labels (integers) and
// the input x get none: no gradient w.r.t. x survives (dy * s).
// CHECK-LABEL: func.func @reuse
// CHECK: %[[D1:.*]] = weft.softmax_cross_entropy_grad %log_prob, %arg1, %{{.*}} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
// CHECK: %[[D0:.*]] = weft.mul %[[D1]], %arg2
// CHECK: weft.mul %[[D1]], %0
// CHECK: %[[G1:.*]] = weft.reshape
// CHECK-NOT: weft.mul %[[D0]], %arg2
// CHECK: weft.mul %[[D0]], %arg0
// CHECK: %[[G2:.*]] = weft.reshape
// CHECK: %[[ACC:.*]] = weft.add %[[G1]], %[[G2]]
// CHECK: return %loss, %[[ACC]]
func.func @reuse(%x: tensor<4x5xf32> {weft.input = "x"}, %y: tensor<4xi64> {weft.input = "y"},
                 %s: tensor<5xf32> {weft.param = "s"}) -> tensor<f32> {
  %0 = weft.mul %x, %s : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %1 = weft.mul %0, %s : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %l, %lp = weft.softmax_cross_entropy %1, %y : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
  return %l : tensor<f32>
}
