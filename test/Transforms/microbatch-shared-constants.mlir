// RUN: weft-opt %s --weft-accumulate-microbatches=microbatches=2 | FileCheck %s

// weft-accumulate-microbatches makes each constant once, before every
// micro-batch, and the micro-batches share it (M copies would cost M times
// its arena bytes and plan text: a 2048-token causal mask is 4 MiB).
// A constant an op writes in place (weft.assign, through a view of it) is
// not shared: each micro-batch has its own. One nothing writes is.
// CHECK-LABEL: func.func @written
// CHECK: %[[READ:.*]] = weft.constant dense<2.000000e+00>
// CHECK-NOT: dense<2.000000e+00>
// CHECK: %[[C0:.*]] = weft.constant {weft.task = #weft.task<F, micro_batch = 0>} dense<0.000000e+00>
// CHECK: weft.reshape %[[C0]]
// CHECK: weft.assign
// CHECK: %[[C1:.*]] = weft.constant {weft.task = #weft.task<F, micro_batch = 1>} dense<0.000000e+00>
// CHECK: weft.reshape %[[C1]]
// CHECK: weft.assign
func.func @written(%x: tensor<4x3xf32> {weft.input = "x"},
                   %w: tensor<3x1xf32> {weft.param = "w"}) -> tensor<f32> {
  %two = weft.constant dense<2.0> : tensor<f32>
  %zero = weft.constant dense<0.0> : tensor<4x1xf32>
  %flat = weft.reshape %zero {shape = array<i64: 4>} : (tensor<4x1xf32>) -> tensor<4xf32>
  %y = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x1xf32>) -> tensor<4x1xf32>
  %yf = weft.reshape %y {shape = array<i64: 4>} : (tensor<4x1xf32>) -> tensor<4xf32>
  %set = weft.assign %flat, %yf : tensor<4xf32>
  %l = weft.reduce_mean %set {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %m = weft.mul %l, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %m : tensor<f32>
}
