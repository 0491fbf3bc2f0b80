// RUN: weft-opt %s --split-input-file --weft-fuse-rms-norm | FileCheck %s

// Llama's RMSNorm as torch exports it: w * (x * (1 / sqrt(mean(pow(x, 2)) +
// eps))). One weft.rms_norm; the chain and its constants die.
// CHECK-LABEL: func.func @llama
// CHECK-NEXT: %[[Y:.*]], %{{.*}} = weft.rms_norm %arg0, %arg1 {axis = 2 : i64, epsilon = 9.9999999747524271E-7 : f64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x1xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @llama(%x: tensor<2x3x8xf32>, %w: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %two = weft.constant dense<2.0> : tensor<f32>
  %sq = weft.pow %x, %two : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
  %m = weft.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %eps = weft.constant dense<1.0e-6> : tensor<f32>
  %z = weft.add %m, %eps : (tensor<2x3x1xf32>, tensor<f32>) -> tensor<2x3x1xf32>
  %s = weft.sqrt %z : tensor<2x3x1xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %r = weft.div %one, %s : (tensor<f32>, tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  %n = weft.mul %x, %r : (tensor<2x3x8xf32>, tensor<2x3x1xf32>) -> tensor<2x3x8xf32>
  %y = weft.mul %w, %n : (tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %y : tensor<2x3x8xf32>
}

// -----

// Another spelling: x * x, pow(., -0.5), the weight first, eps first in
// the add; a normalised output read twice (q, k, v) still fuses.
// CHECK-LABEL: func.func @spelled_otherwise
// CHECK-NEXT: %[[Y:.*]], %{{.*}} = weft.rms_norm %arg0, %arg1 {axis = 1 : i64, epsilon = 9.9999997473787516E-6 : f64}
// CHECK-NEXT: return %[[Y]], %[[Y]]
func.func @spelled_otherwise(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %sq = weft.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = weft.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %eps = weft.constant dense<1.0e-5> : tensor<f32>
  %z = weft.add %eps, %m : (tensor<f32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %h = weft.constant dense<-0.5> : tensor<f32>
  %r = weft.pow %z, %h : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %wx = weft.mul %w, %x : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = weft.mul %wx, %r : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %y, %y : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// x / sqrt(mean(x^2)) * w: no eps, a division by the root.
// CHECK-LABEL: func.func @divided
// CHECK: weft.rms_norm %arg0, %arg1 {axis = 1 : i64, epsilon = 0.000000e+00 : f64}
// CHECK-NOT: weft.sqrt
func.func @divided(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %sq = weft.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = weft.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %s = weft.sqrt %m : tensor<4x1xf32>
  %n = weft.div %x, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y = weft.mul %n, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// What must not fuse: a LayerNorm-like chain whose mean is of x, not x^2
// (x^1 under the root); a scale of 2 (the constant factor is not 1); the
// inverse rms read elsewhere; no weight.
// CHECK-LABEL: func.func @not_rms_norm
// CHECK-NOT: weft.rms_norm
func.func @not_rms_norm(%x: tensor<4x16xf32>, %w: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x1xf32>) {
  %m0 = weft.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %s0 = weft.sqrt %m0 : tensor<4x1xf32>
  %n0 = weft.div %x, %s0 : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y0 = weft.mul %n0, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %sq = weft.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m1 = weft.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %s1 = weft.sqrt %m1 : tensor<4x1xf32>
  %n1 = weft.div %x, %s1 : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %two = weft.constant dense<2.0> : tensor<f32>
  %n2 = weft.mul %n1, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %y1 = weft.mul %n2, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %sq2 = weft.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m2 = weft.reduce_mean %sq2 {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %r2 = weft.reciprocal %m2 : tensor<4x1xf32>
  %y2 = weft.mul %x, %r2 : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %y0, %y1, %y2, %r2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x1xf32>
}

// -----

// Non-integer powers of x are not x: sqrt(x * x) is |x| and pow(pow(x,
// 0.5), 2) is NaN below 0, so neither is RMSNorm's x¹; a bf16 constant
// factor near 1 (1.0234375) is a scale, not a rounding of 1.
// CHECK-LABEL: func.func @not_x
// CHECK-NOT: weft.rms_norm
func.func @not_x(%x: tensor<4x16xf32>, %w: tensor<16xf32>, %xb: tensor<4x16xbf16>, %wb: tensor<16xbf16>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xbf16>) {
  %sq = weft.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = weft.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %s = weft.sqrt %m : tensor<4x1xf32>
  %xx = weft.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %ax = weft.sqrt %xx : tensor<4x16xf32>
  %n = weft.div %ax, %s : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y0 = weft.mul %n, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %sq1 = weft.mul %x, %x : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m1 = weft.reduce_mean %sq1 {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xf32>) -> tensor<4x1xf32>
  %s1 = weft.sqrt %m1 : tensor<4x1xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %two = weft.constant dense<2.0> : tensor<f32>
  %r = weft.pow %x, %half : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %rr = weft.pow %r, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %n1 = weft.div %rr, %s1 : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %y1 = weft.mul %n1, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %sqb = weft.mul %xb, %xb : (tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<4x16xbf16>
  %mb = weft.reduce_mean %sqb {axes = array<i64: 1>, keepdims = true} : (tensor<4x16xbf16>) -> tensor<4x1xbf16>
  %sb = weft.sqrt %mb : tensor<4x1xbf16>
  %nb = weft.div %xb, %sb : (tensor<4x16xbf16>, tensor<4x1xbf16>) -> tensor<4x16xbf16>
  %k = weft.constant dense<1.0234375> : tensor<bf16>
  %kb = weft.mul %nb, %k : (tensor<4x16xbf16>, tensor<bf16>) -> tensor<4x16xbf16>
  %y2 = weft.mul %kb, %wb : (tensor<4x16xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %y0, %y1, %y2 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xbf16>
}
