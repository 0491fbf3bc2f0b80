// RUN: weft-opt %s --weft-fold-attention-split --weft-autodiff | FileCheck %s

// Differentiated after the fold, the attention's gradient is one packed
// [B, S, 3, H, D] value, reshaped to the projection's [B, S, 3 H D]
// gradient: no split forward, no concat backward, and the packed operand's
// three uses get one gradient, not three summed.
// CHECK-LABEL: func.func @packed
// CHECK-NOT: weft.split
// CHECK: %[[P:.*]] = weft.reshape %arg0 {shape = array<i64: 2, 8, 3, 4, 16>}
// CHECK: %[[O:.*]], %[[L:.*]] = weft.attention %[[P]], %[[P]], %[[P]] {causal = true, layout = "bs3hd", scale = 2.500000e-01 : f64}
// CHECK-NOT: weft.concat
// CHECK: %[[G:.*]] = weft.attention_grad %[[P]], %[[P]], %[[P]], %[[O]], %[[L]], %{{.*}} {causal = true, layout = "bs3hd", scale = 2.500000e-01 : f64, weft.task = #weft.task<B>}
// CHECK-SAME: -> tensor<2x8x3x4x16xf32>
// CHECK-NOT: weft.add
// CHECK: %[[DX:.*]] = weft.reshape %[[G]] {shape = array<i64: 2, 8, 192>
// CHECK-NOT: weft.concat
// CHECK: return %{{.*}}, %[[DX]]
func.func @packed(%x: tensor<2x8x192xf32> {weft.param = "x"}) -> tensor<f32> {
  %q, %k, %v = weft.split %x {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %qh = weft.reshape %q {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %kh = weft.reshape %k {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %vh = weft.reshape %v {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o, %s = weft.attention %qh, %kh, %vh {causal = true, layout = "bshd", scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  %l = weft.reduce_mean %o {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x8x4x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
