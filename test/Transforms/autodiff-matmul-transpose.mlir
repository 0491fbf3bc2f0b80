// RUN: weft-opt %s --split-input-file --weft-autodiff | FileCheck %s

// Attention's products differentiate into products that read their
// operands transposed (transA/transB), copying nothing: dP = dY V^T and
// dV = P^T dY; dQ = dS (k^T)^T reads k^T; dk is computed transposed,
// (dS^T Q), so k^T's transpose [0, 2, 3, 1] and the product's transpose
// compose into one that keeps the last dim ([0, 2, 1, 3]: rows copied).
// CHECK-LABEL: func.func @attention
// CHECK-NOT: perm = array<i64: 0, 1, 3, 2>
// CHECK-NOT: perm = array<i64: 0, 3, 1, 2>
// CHECK-DAG: weft.matmul %{{.*}}, %arg2 {transB = true, weft.task = #weft.task<B>} : (tensor<1x2x3x3xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x3x5xf32>
// CHECK-DAG: weft.matmul %[[P:.*]], %{{.*}} {transA = true, weft.task = #weft.task<B>} : (tensor<1x2x3x5xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x3xf32>
// CHECK-DAG: weft.matmul %[[DS:.*]], %[[KT:.*]] {transB = true, weft.task = #weft.task<B>} : (tensor<1x2x3x5xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x4xf32>
// CHECK-DAG: %[[DKT:.*]] = weft.matmul %{{.*}}, %arg0 {transA = true, weft.task = #weft.task<B>} : (tensor<1x2x3x5xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x5x4xf32>
// CHECK-DAG: %[[DK:.*]] = weft.transpose %[[DKT]] {perm = array<i64: 0, 2, 1, 3>, weft.task = #weft.task<B>} : (tensor<1x2x5x4xf32>) -> tensor<1x5x2x4xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DK]]
func.func @attention(%q: tensor<1x2x3x4xf32> {weft.param = "q"}, %k: tensor<1x5x2x4xf32> {weft.param = "k"},
                     %v: tensor<1x2x5x3xf32> {weft.param = "v"}) -> tensor<f32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x4x5xf32>
  %s = weft.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %p = weft.softmax %s {axis = 3 : i64} : tensor<1x2x3x5xf32>
  %y = weft.matmul %p, %v : (tensor<1x2x3x5xf32>, tensor<1x2x5x3xf32>) -> tensor<1x2x3x3xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A batched product by a transpose of its last two dims: (V^T)^T is V, so
// dA = dY V reads V plainly and dV = dY^T A is one product, no transpose.
// CHECK-LABEL: func.func @transposed_rhs
// CHECK-NOT: weft.transpose {{.*}}weft.task = #weft.task<B
// CHECK-DAG: weft.matmul %{{.*}}, %arg1 {weft.task = #weft.task<B>} : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
// CHECK-DAG: %[[DV:.*]] = weft.matmul %{{.*}}, %arg0 {transA = true, weft.task = #weft.task<B>} : (tensor<2x3x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DV]]
func.func @transposed_rhs(%a: tensor<2x3x4xf32> {weft.param = "a"}, %v: tensor<2x5x4xf32> {weft.param = "v"}) -> tensor<f32> {
  %w = weft.transpose %v {perm = array<i64: 0, 2, 1>} : (tensor<2x5x4xf32>) -> tensor<2x4x5xf32>
  %y = weft.matmul %a, %w : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}


// -----

// k^T read elsewhere too: its rule sums both gradients first, so dk^T is
// one plain product (Q^T dS) and k's gradient one transpose of the sum.
// CHECK-LABEL: func.func @shared_keys
// CHECK: %[[DKT:.*]] = weft.matmul %arg0, %{{.*}} {transA = true, weft.task = #weft.task<B>} : (tensor<1x2x3x4xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x4x5xf32>
// CHECK: %[[SUM:.*]] = weft.add %{{.*}}, %[[DKT]]
// CHECK: weft.transpose %[[SUM]] {perm = array<i64: 0, 3, 1, 2>, weft.task = #weft.task<B>}
func.func @shared_keys(%q: tensor<1x2x3x4xf32> {weft.param = "q"}, %k: tensor<1x5x2x4xf32> {weft.param = "k"}) -> tensor<f32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x5x2x4xf32>) -> tensor<1x2x4x5xf32>
  %s = weft.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32>) -> tensor<1x2x3x5xf32>
  %l1 = weft.reduce_sum %s {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x3x5xf32>) -> tensor<f32>
  %l2 = weft.reduce_sum %kt {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x4x5xf32>) -> tensor<f32>
  %l = weft.add %l1, %l2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
