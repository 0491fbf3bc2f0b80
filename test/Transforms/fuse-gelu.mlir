// RUN: weft-opt %s --split-input-file --weft-fuse-gelu | FileCheck %s

// torch.nn.functional.gelu as torch exports it at opset 17.
// CHECK-LABEL: func.func @torch_gelu
// CHECK-NEXT: %[[G:.*]] = weft.gelu %arg0 : tensor<4x8xf32>
// CHECK-NEXT: weft.reduce_sum %[[G]]
// CHECK-NOT: weft.erf
func.func @torch_gelu(%x: tensor<4x8xf32> {weft.param = "x"}) -> tensor<f32> {
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f32>
  %t = weft.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The BERT spelling: x * 0.5 * (1 + erf(x * 1/sqrt(2))), operands swapped.
// CHECK-LABEL: func.func @bert_gelu
// CHECK-NEXT: %[[G:.*]] = weft.gelu %arg0 : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @bert_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = weft.constant dense<0.5> : tensor<f32>
  %h = weft.mul %half, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = weft.constant dense<0.707106769> : tensor<f32>
  %t = weft.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = weft.mul %a, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Not GELU: the erf's argument is scaled by 2, not 1/sqrt(2).
// CHECK-LABEL: func.func @wrong_scale
// CHECK-NOT: weft.gelu
// CHECK: weft.erf
func.func @wrong_scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = weft.constant dense<2.0> : tensor<f32>
  %t = weft.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// An intermediate that something else reads stays: fusing would compute it
// twice. The chain is left alone.
// CHECK-LABEL: func.func @shared_intermediate
// CHECK-NOT: weft.gelu
// CHECK: weft.erf
func.func @shared_intermediate(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f32>
  %t = weft.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y, %a : tensor<4x8xf32>, tensor<4x8xf32>
}
