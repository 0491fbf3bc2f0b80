// RUN: weft-opt %s --weft-autodiff --weft-checkpoint=policy=selective | FileCheck %s

// Megatron's selective recompute on one attention layer: only core
// attention is cloned into the backward (QK^T, the scale, softmax, dropout),
// right before the first backward op; the projections, the attention x V
// matmul (its gradient needs only its inputs) and the output projection are
// not. The backward reads the recomputed probabilities and mask.
// CHECK-LABEL: func.func @attention
// CHECK: %[[Q:.*]] = weft.matmul %arg0, %arg1 :
// CHECK: %[[KT:.*]] = weft.transpose
// CHECK: %[[S:.*]] = weft.matmul %[[Q]], %[[KT]] :
// CHECK: weft.reduce_mean
// CHECK-NOT: #weft.task<R
// CHECK: %[[S2:.*]] = weft.matmul %[[Q]], %[[KT]] {weft.task = #weft.task<R>}
// CHECK-NEXT: %[[D2:.*]] = weft.div %[[S2]], %{{.*}} {weft.task = #weft.task<R>}
// CHECK-NEXT: %[[P2:.*]] = weft.softmax %[[D2]] {axis = 1 : i64, weft.task = #weft.task<R>}
// CHECK-NEXT: %[[O2:.*]], %[[M2:.*]] = weft.dropout %[[P2]] {{.*}}weft.task = #weft.task<R
// CHECK-NOT: #weft.task<R
// CHECK-DAG: weft.gemm %[[O2]], %{{.*}} {{{.*}}transA = true
// CHECK-DAG: weft.dropout_grad %{{.*}}, %[[M2]]
// CHECK-DAG: weft.softmax_grad %[[P2]]
// CHECK: return
func.func @attention(%x: tensor<8x16xf32> {weft.input = "x"},
                     %wq: tensor<16x16xf32> {weft.param = "wq"},
                     %wk: tensor<16x16xf32> {weft.param = "wk"},
                     %wv: tensor<16x16xf32> {weft.param = "wv"}) -> tensor<f32> {
  %q = weft.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %k = weft.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %v = weft.matmul %x, %wv : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %kt = weft.transpose %k {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %s = weft.matmul %q, %kt : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %c = weft.constant dense<4.0> : tensor<f32>
  %d = weft.div %s, %c : (tensor<8x8xf32>, tensor<f32>) -> tensor<8x8xf32>
  %p = weft.softmax %d {axis = 1 : i64} : tensor<8x8xf32>
  %o, %m = weft.dropout %p {ratio = 0.1 : f64, training = true} : (tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xi1>)
  %a = weft.matmul %o, %v : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %l = weft.reduce_mean %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
