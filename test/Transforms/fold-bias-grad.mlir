// RUN: weft-opt %s --split-input-file --weft-fold-bias-grad | FileCheck %s

// A Linear layer's weight gradient dY^T X and bias gradient (dY's column
// sums, kept [1, N]): one wgrad_bias, the sums read through a reshape.
// CHECK-LABEL: func.func @linear
// CHECK: %[[W:.*]], %[[B:.*]] = weft.wgrad_bias %arg0, %arg1 {weft.task = #weft.task<B>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[K:.*]] = weft.reshape %[[B]] {shape = array<i64: 1, 4>, weft.task = #weft.task<B>}
// CHECK-NOT: weft.gemm
// CHECK-NOT: weft.reduce_sum
// CHECK: return %[[W]], %[[K]]
func.func @linear(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<1x4xf32>) {
  %dw = weft.gemm %dy, %x {beta = 0.0 : f64, transA = true, weft.task = #weft.task<B>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
  %db = weft.reduce_sum %dy {axes = array<i64: 0>, keepdims = true, weft.task = #weft.task<B>} : (tensor<6x4xf32>) -> tensor<1x4xf32>
  return %dw, %db : tensor<4x3xf32>, tensor<1x4xf32>
}

// -----

// The sums first, not keeping the dim: the fused op takes their place.
// CHECK-LABEL: func.func @sums_first
// CHECK: %[[W:.*]], %[[B:.*]] = weft.wgrad_bias %arg0, %arg1
// CHECK-NOT: weft.reshape
// CHECK: return %[[W]], %[[B]]
func.func @sums_first(%dy: tensor<6x4xbf16>, %x: tensor<6x3xbf16>) -> (tensor<4x3xbf16>, tensor<4xbf16>) {
  %db = weft.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : (tensor<6x4xbf16>) -> tensor<4xbf16>
  %dw = weft.gemm %dy, %x {beta = 0.0 : f64, transA = true} : (tensor<6x4xbf16>, tensor<6x3xbf16>) -> tensor<4x3xbf16>
  return %dw, %db : tensor<4x3xbf16>, tensor<4xbf16>
}

// -----

// A layer computing x W (W [K, N], Hugging Face's Conv1D): its weight
// gradient X^T dY reads dY as the gemm's B; the fused op is transposed.
// CHECK-LABEL: func.func @conv1d
// CHECK: %[[W:.*]], %[[B:.*]] = weft.wgrad_bias %arg0, %arg1 {transposed} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<3x4xf32>, tensor<4xf32>)
// CHECK-NOT: weft.gemm
// CHECK: return %[[W]], %[[B]]
func.func @conv1d(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>) -> (tensor<3x4xf32>, tensor<4xf32>) {
  %dw = weft.gemm %x, %dy {beta = 0.0 : f64, transA = true} : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
  %db = weft.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : (tensor<6x4xf32>) -> tensor<4xf32>
  return %dw, %db : tensor<3x4xf32>, tensor<4xf32>
}

// -----

// Left alone: sums over the other dim; a gemm that reads dY untransposed,
// scales it, or adds a C; X computed between the sums and the gemm.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: weft.wgrad_bias
// CHECK: return
func.func @refused(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>, %y: tensor<4x3xf32>, %c: tensor<4x3xf32>) -> (tensor<6xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>) {
  %cols = weft.reduce_sum %dy {axes = array<i64: 1>, keepdims = false} : (tensor<6x4xf32>) -> tensor<6xf32>
  %plain = weft.gemm %dy, %y {beta = 0.0 : f64} : (tensor<6x4xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %rows = weft.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : (tensor<6x4xf32>) -> tensor<4xf32>
  %scaled = weft.gemm %dy, %x {alpha = 2.0 : f64, beta = 0.0 : f64, transA = true} : (tensor<6x4xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
  %withC = weft.gemm %dy, %x, %c {transA = true} : (tensor<6x4xf32>, tensor<6x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %rows2 = weft.reduce_sum %dy {axes = array<i64: 0>, keepdims = false} : (tensor<6x4xf32>) -> tensor<4xf32>
  %late = weft.mul %x, %x : (tensor<6x3xf32>, tensor<6x3xf32>) -> tensor<6x3xf32>
  %after = weft.gemm %dy, %late {beta = 0.0 : f64, transA = true} : (tensor<6x4xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
  return %cols, %scaled, %rows, %scaled, %withC, %rows2, %after : tensor<6xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>
}
