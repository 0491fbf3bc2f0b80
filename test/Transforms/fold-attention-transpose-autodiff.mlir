// RUN: weft-opt %s --weft-fold-attention-transpose --weft-autodiff | FileCheck %s

// Differentiated after the fold, the attention's gradient has its layout:
// dq, dk and dv come out [B, S, H, D], as the projections' gradients
// need them, and no transpose is left forward or backward.
// CHECK-LABEL: func.func @heads
// CHECK-NOT: weft.transpose
// CHECK: %[[O:.*]], %[[L:.*]] = weft.attention %arg0, %arg1, %arg2 {causal = true, layout = "bshd", scale = 2.500000e-01 : f64}
// CHECK-NOT: weft.transpose
// CHECK: weft.attention_grad %arg0, %arg1, %arg2, %[[O]], %[[L]], %{{.*}} {causal = true, layout = "bshd", scale = 2.500000e-01 : f64, weft.task = #weft.task<B>}
// CHECK-SAME: -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>)
// CHECK-NOT: weft.transpose
func.func @heads(%q: tensor<2x8x4x16xf32> {weft.param = "q"},
                 %k: tensor<2x8x4x16xf32> {weft.param = "k"},
                 %v: tensor<2x8x4x16xf32> {weft.param = "v"}) -> tensor<f32> {
  %qt = weft.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %vt = weft.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o, %s = weft.attention %qt, %kt, %vt {causal = true, scale = 0.25 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  %y = weft.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x8x4x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
