// RUN: weft-opt %s --split-input-file --weft-fold-residual-layer-norm | FileCheck %s

// A residual add whose sum a LayerNorm normalises and the next add reads:
// one add_layer_norm at the add's place, its sum read where the add's was.
// CHECK-LABEL: func.func @residual
// CHECK: %[[Y:.*]], %[[M:.*]], %[[R:.*]], %[[S:.*]] = weft.add_layer_norm %arg0, %arg1, %arg2, %arg3 {axis = 1 : i64}
// CHECK-NOT: weft.add
// CHECK-NOT: weft.layer_norm
// CHECK: %[[N:.*]] = weft.mul %[[Y]], %[[S]]
// CHECK: return %[[N]], %[[M]], %[[R]]
func.func @residual(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %sum = weft.add %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y, %m, %rs = weft.layer_norm %sum, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %next = weft.mul %y, %sum : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %next, %m, %rs : tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// The scale computed after the add, nothing reading the sum before the
// LayerNorm: the fused op takes the LayerNorm's place. It keeps the
// bookkeeping both ops share (stage, micro-batch), without a bias too.
// CHECK-LABEL: func.func @later_scale
// CHECK: %[[G:.*]] = weft.mul %arg2, %arg2
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}}, %[[S:.*]] = weft.add_layer_norm %arg0, %arg1, %[[G]] {axis = 1 : i64, weft.task = #weft.task<F, micro_batch = 1, stage = 0>} : (tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xbf16>)
// CHECK: return %[[S]]
func.func @later_scale(%x: tensor<4x8xbf16>, %r: tensor<4x8xbf16>, %g: tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %sum = weft.add %x, %r {weft.task = #weft.task<F, micro_batch = 1, stage = 0>} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %g2 = weft.mul %g, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y, %m, %rs = weft.layer_norm %sum, %g2 {axis = 1 : i64, epsilon = 1.0e-5 : f64, weft.task = #weft.task<F, micro_batch = 1, stage = 0>} : (tensor<4x8xbf16>, tensor<8xf32>) -> (tensor<4x8xbf16>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %sum, %y : tensor<4x8xbf16>, tensor<4x8xbf16>
}

// -----

// Left alone: a broadcasting add; the sum read before a LayerNorm whose
// scale is computed after the add; an add and a LayerNorm on different
// stages; a recomputed LayerNorm of an original add.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: weft.add_layer_norm
// CHECK: return
func.func @refused(%x: tensor<4x8xf32>, %row: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %b = weft.add %x, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %y0, %m0, %r0 = weft.layer_norm %b, %g {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %s1 = weft.add %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %early = weft.mul %s1, %s1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %g1 = weft.mul %g, %g : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y1, %m1, %r1 = weft.layer_norm %s1, %g1 {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %s2 = weft.add %y0, %x {weft.task = #weft.task<F, stage = 0>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y2, %m2, %r2 = weft.layer_norm %s2, %g {axis = 1 : i64, weft.task = #weft.task<F, stage = 1>} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  %s3 = weft.add %y1, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y3, %m3, %r3 = weft.layer_norm %s3, %g {axis = 1 : i64, weft.task = #weft.task<R>} : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y0, %early, %y1, %y2, %y3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
