// RUN: weft-opt %s --weft-fuse-attention --weft-autodiff | FileCheck %s

// Differentiated, the fused attention keeps no [s, s] tensor: the backward
// is one attention_grad reading q, k, v, the output and its statistics
// (FlashAttention), with the forward's attributes; no softmax or dropout
// gradient, no mask.
// CHECK-LABEL: func.func @layer
// CHECK: %[[O:.*]], %[[L:.*]] = weft.attention %[[Q:.*]], %[[K:.*]], %[[V:[^ ]*]] {causal = true, dropout_ratio = 1.000000e-01 : f64, scale = 2.500000e-01 : f64}
// CHECK: weft.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[L]], %{{.*}} {causal = true, dropout_ratio = 1.000000e-01 : f64, scale = 2.500000e-01 : f64, weft.task = #weft.task<B>}
// CHECK-NOT: softmax_grad
// CHECK-NOT: dropout_grad
func.func @layer(%x: tensor<2x4x16xf32> {weft.input = "x"},
                 %wq: tensor<16x16xf32> {weft.param = "wq"},
                 %wk: tensor<16x16xf32> {weft.param = "wk"},
                 %wv: tensor<16x16xf32> {weft.param = "wv"}) -> tensor<f32> {
  %q = weft.matmul %x, %wq : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %k = weft.matmul %x, %wk : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %v = weft.matmul %x, %wv : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x4x16xf32>) -> tensor<2x16x4xf32>
  %s = weft.matmul %q, %kt : (tensor<2x4x16xf32>, tensor<2x16x4xf32>) -> tensor<2x4x4xf32>
  %c = weft.constant dense<4.0> : tensor<f32>
  %d = weft.div %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %future = weft.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %inf = weft.constant dense<0xFF800000> : tensor<f32>
  %m = weft.where %future, %inf, %d : (tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = weft.softmax %m {axis = 2 : i64} : tensor<2x4x4xf32>
  %o, %mask = weft.dropout %p {ratio = 0.1 : f64, training = true} : (tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xi1>)
  %a = weft.matmul %o, %v : (tensor<2x4x4xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %l = weft.reduce_mean %a {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
