// RUN: weft-opt %s --split-input-file --weft-fuse-glu | FileCheck %s

// Llama's SwiGLU as torch exports it: (g * sigmoid(g)) * u. One weft.glu;
// the sigmoid and the silu product die.
// CHECK-LABEL: func.func @swiglu
// CHECK-NEXT: %[[Y:.*]] = weft.glu %arg0, %arg1 {activation = "silu"} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @swiglu(%g: tensor<2x3x8xf32>, %u: tensor<2x3x8xf32>) -> tensor<2x3x8xf32> {
  %s = weft.sigmoid %g : tensor<2x3x8xf32>
  %silu = weft.mul %g, %s : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %y = weft.mul %silu, %u : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// The other orders: sigmoid(g) * g, up on the left; GeGLU in both GELU
// forms (weft-fuse-gelu's ops).
// CHECK-LABEL: func.func @orders_and_gelus
// CHECK-NEXT: weft.glu %arg0, %arg1 {activation = "silu"}
// CHECK-NEXT: weft.glu %arg0, %arg1 {activation = "gelu"}
// CHECK-NEXT: weft.glu %arg0, %arg1 {activation = "gelu_tanh"}
// CHECK-NOT: weft.sigmoid
func.func @orders_and_gelus(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = weft.sigmoid %g : tensor<4x8xf32>
  %silu = weft.mul %s, %g : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y0 = weft.mul %u, %silu : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = weft.gelu %g : tensor<4x8xf32>
  %y1 = weft.mul %e, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = weft.gelu_tanh %g : tensor<4x8xf32>
  %y2 = weft.mul %u, %t : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y0, %y1, %y2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// What must not fuse: an activation read elsewhere too; a product that
// broadcasts; a sigmoid of another value than its factor (no silu).
// CHECK-LABEL: func.func @not_glu
// CHECK-NOT: weft.glu
func.func @not_glu(%g: tensor<4x8xf32>, %u: tensor<4x8xf32>, %b: tensor<8xf32>, %h: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = weft.gelu %g : tensor<4x8xf32>
  %y0 = weft.mul %e, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = weft.gelu_tanh %g : tensor<4x8xf32>
  %y1 = weft.mul %t, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = weft.sigmoid %h : tensor<4x8xf32>
  %m = weft.mul %g, %s : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y2 = weft.mul %m, %u : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y0, %y1, %y2, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
