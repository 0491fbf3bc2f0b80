// RUN: weft-opt %s --weft-fuse-gelu --weft-autodiff --weft-plan-memory=list-kept 2>&1 | FileCheck %s
// RUN: weft-opt %s --weft-autodiff --weft-plan-memory=list-kept 2>&1 | FileCheck %s --check-prefix=CHAIN

// A layer, then GELU. The fused GELU's backward reads only its input h, so h
// (4x8 f32, 128 bytes) is the one activation kept for the backward. The
// unfused chain keeps h, h / sqrt(2) and 1 + erf(..): 384 bytes.
// CHECK: memory @layer: kept weft.matmul tensor<4x8xf32> 128
// CHECK-NOT: memory @layer: kept weft
// CHECK: memory @layer: max_kept_activations 128
// CHECK: %[[H:.*]] = weft.matmul %arg0, %arg1
// CHECK: weft.gelu_grad %[[H]], %{{.*}} : tensor<4x8xf32>
// CHAIN: memory @layer: max_kept_activations 384
func.func @layer(%x: tensor<4x8xf32> {weft.input = "x"}, %w: tensor<8x8xf32> {weft.param = "w"}) -> tensor<f32> {
  %h = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f32>
  %t = weft.div %h, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %h, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
