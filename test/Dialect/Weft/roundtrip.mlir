// Custom assembly round-trips through print and parse.
// RUN: weft-opt %s | weft-opt | FileCheck %s

// CHECK-LABEL: func.func @block
func.func @block(%x: tensor<2x4x8xf32>, %w: tensor<8x24xf32>, %g: tensor<8xf32>) -> tensor<f32> {
  // The default epsilon (1e-5) is elided.
  // CHECK: weft.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64} :
  %n, %m, %r = weft.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  // CHECK: weft.matmul
  %h = weft.matmul %n, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  // CHECK: weft.split %{{.*}} {axis = 2 : i64, sizes = array<i64: 8, 8, 8>}
  %q:3 = weft.split %h {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<2x4x24xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  // CHECK: weft.transpose %{{.*}} {perm = array<i64: 0, 2, 1>}
  %kt = weft.transpose %q#1 {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %s = weft.matmul %q#0, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  // CHECK: weft.softmax %{{.*}} {axis = 2 : i64} : tensor<2x4x4xf32>
  %p = weft.softmax %s {axis = 2 : i64} : tensor<2x4x4xf32>
  // CHECK: weft.dropout %{{.*}} {ratio = 1.000000e-01 : f64, training = true}
  %d, %mask = weft.dropout %p {ratio = 0.1 : f64, training = true} : (tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xi1>)
  %o = weft.matmul %d, %q#2 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: weft.reduce_mean %{{.*}} {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  %l = weft.reduce_mean %o {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// An op's task: the kind, then only the fields it has.
// CHECK-LABEL: func.func @tasks
// CHECK: weft.relu %{{.*}} {weft.task = #weft.task<B, micro_batch = 1, stage = 0>}
// CHECK: weft.relu %{{.*}} {weft.task = #weft.task<R, chunk = 2>}
// CHECK: weft.relu %{{.*}} {weft.task = #weft.task<U, stage = 3>}
// CHECK: weft.relu %{{.*}} {weft.task = #weft.task<W, micro_batch = 0>}
func.func @tasks(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = weft.relu %x {weft.task = #weft.task<B, stage = 0, micro_batch = 1>} : tensor<4xf32>
  %1 = weft.relu %0 {weft.task = #weft.task<R, chunk = 2>} : tensor<4xf32>
  %2 = weft.relu %1 {weft.task = #weft.task<U, stage = 3>} : tensor<4xf32>
  %3 = weft.relu %2 {weft.task = #weft.task<W, micro_batch = 0>} : tensor<4xf32>
  return %3 : tensor<4xf32>
}
