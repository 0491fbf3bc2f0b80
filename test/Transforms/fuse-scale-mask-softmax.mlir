// RUN: weft-opt %s --split-input-file --weft-fuse-scale-mask-softmax | FileCheck %s

// Core attention's scale, mask and softmax, and their backward (as
// weft-autodiff writes it), in bf16: one kernel each way, with the
// literals as attributes and every op's bookkeeping kept.
// CHECK-LABEL: func.func @core_attention
// CHECK: %[[INF:.*]] = weft.constant dense<0xFF80> : tensor<bf16>
// CHECK: %[[Y:.*]] = weft.scale_mask_softmax %arg0, %arg1, %[[INF]] {divisor = 9.812500e+00 : f64, weft.task = #weft.task<F>} : (tensor<2x3x4x4xbf16>, tensor<4x4xi1>, tensor<bf16>) -> tensor<2x3x4x4xbf16>
// CHECK-NEXT: %[[DX:.*]] = weft.scale_mask_softmax_grad %[[Y]], %arg2, %arg1 {divisor = 9.812500e+00 : f64, weft.task = #weft.task<B>} : (tensor<2x3x4x4xbf16>, tensor<2x3x4x4xbf16>, tensor<4x4xi1>) -> tensor<2x3x4x4xbf16>
// CHECK-NEXT: return %[[Y]], %[[DX]]
// CHECK-NOT: weft.where
func.func @core_attention(%x: tensor<2x3x4x4xbf16>, %mask: tensor<4x4xi1>,
                          %dy: tensor<2x3x4x4xbf16>) -> (tensor<2x3x4x4xbf16>, tensor<2x3x4x4xbf16>) {
  %c = weft.constant dense<9.812500e+00> : tensor<bf16>
  %inf = weft.constant dense<0xFF80> : tensor<bf16>
  %zero = weft.constant dense<0.0> : tensor<bf16>
  %d = weft.div %x, %c {weft.task = #weft.task<F>} : (tensor<2x3x4x4xbf16>, tensor<bf16>) -> tensor<2x3x4x4xbf16>
  %m = weft.where %mask, %inf, %d {weft.task = #weft.task<F>} : (tensor<4x4xi1>, tensor<bf16>, tensor<2x3x4x4xbf16>) -> tensor<2x3x4x4xbf16>
  %y = weft.softmax %m {axis = 3 : i64, weft.task = #weft.task<F>} : tensor<2x3x4x4xbf16>
  %g = weft.softmax_grad %y, %dy {axis = 3 : i64, weft.task = #weft.task<B>} : tensor<2x3x4x4xbf16>
  %w = weft.where %mask, %zero, %g {weft.task = #weft.task<B>} : (tensor<4x4xi1>, tensor<bf16>, tensor<2x3x4x4xbf16>) -> tensor<2x3x4x4xbf16>
  %dx = weft.div %w, %c {weft.task = #weft.task<B>} : (tensor<2x3x4x4xbf16>, tensor<bf16>) -> tensor<2x3x4x4xbf16>
  return %y, %dx : tensor<2x3x4x4xbf16>, tensor<2x3x4x4xbf16>
}

// -----

// Left alone: a quotient something else reads (it would be computed
// twice), a softmax along another dim, a mask per batch row (the kernels
// read one mask for the batch and the heads), and a backward whose
// select fills a non-zero.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: weft.scale_mask_softmax
// CHECK-COUNT-3: weft.softmax %
// CHECK-NOT: weft.scale_mask_softmax
func.func @kept(%x: tensor<2x4x4xf32>, %mask: tensor<4x4xi1>,
                %rows: tensor<2x4x4xi1>, %dy: tensor<2x4x4xf32>)
    -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %c = weft.constant dense<8.0> : tensor<f32>
  %inf = weft.constant dense<0xFF800000> : tensor<f32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %d = weft.div %x, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %m = weft.where %mask, %inf, %d : (tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y = weft.softmax %m {axis = 2 : i64} : tensor<2x4x4xf32>
  %d2 = weft.div %x, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %m2 = weft.where %mask, %inf, %d2 : (tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y2 = weft.softmax %m2 {axis = 1 : i64} : tensor<2x4x4xf32>
  %d3 = weft.div %x, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %m3 = weft.where %rows, %inf, %d3 : (tensor<2x4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %y3 = weft.softmax %m3 {axis = 2 : i64} : tensor<2x4x4xf32>
  %g = weft.softmax_grad %y, %dy {axis = 2 : i64} : tensor<2x4x4xf32>
  %w = weft.where %mask, %one, %g : (tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %dx = weft.div %w, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  return %y, %y2, %y3, %dx, %d : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
}
