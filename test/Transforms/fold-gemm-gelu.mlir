// RUN: weft-opt %s --split-input-file --weft-fold-gemm-gelu | FileCheck %s

// An MLP's first Linear layer (bias in C), its [B S, 4h] output seen as
// [B, S, 4h], the tanh GELU: one gemm_gelu_tanh; the GELU's gradient reads
// its pre-activation. In the backward, the second layer's input gradient
// read only by the GELU's gradient: one gemm_gelu_tanh_grad on the
// pre-activation's [B S, 4h] form.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[Y:.*]], %[[P:.*]] = weft.gemm_gelu_tanh %arg0, %arg1, %arg2 {transB = true} : (tensor<6x4xbf16>, tensor<8x4xbf16>, tensor<8xbf16>) -> (tensor<6x8xbf16>, tensor<6x8xbf16>)
// CHECK-NEXT: %[[V:.*]] = weft.reshape %[[Y]] {shape = array<i64: 2, 3, 8>}
// CHECK-NEXT: %[[R:.*]] = weft.reshape %[[P]] {shape = array<i64: 2, 3, 8>}
// CHECK-NOT: weft.gelu_tanh %
// CHECK: %[[D:.*]] = weft.gemm_gelu_tanh_grad %arg3, %arg4, %[[P]] {weft.task = #weft.task<B>} : (tensor<6x5xbf16>, tensor<5x8xbf16>, tensor<6x8xbf16>) -> tensor<6x8xbf16>
// CHECK-NEXT: %[[DV:.*]] = weft.reshape %[[D]] {shape = array<i64: 2, 3, 8>, weft.task = #weft.task<B>}
// CHECK-NOT: weft.gelu_tanh_grad
// CHECK: return %[[V]], %[[DV]]
func.func @mlp(%x: tensor<6x4xbf16>, %w: tensor<8x4xbf16>, %b: tensor<8xbf16>, %dy: tensor<6x5xbf16>, %w2: tensor<5x8xbf16>) -> (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>) {
  %h = weft.gemm %x, %w, %b {transB = true} : (tensor<6x4xbf16>, tensor<8x4xbf16>, tensor<8xbf16>) -> tensor<6x8xbf16>
  %h3 = weft.reshape %h {shape = array<i64: 2, 3, 8>} : (tensor<6x8xbf16>) -> tensor<2x3x8xbf16>
  %g = weft.gelu_tanh %h3 : tensor<2x3x8xbf16>
  %dg = weft.gemm %dy, %w2 {beta = 0.0 : f64, weft.task = #weft.task<B>} : (tensor<6x5xbf16>, tensor<5x8xbf16>) -> tensor<6x8xbf16>
  %dg3 = weft.reshape %dg {shape = array<i64: 2, 3, 8>, weft.task = #weft.task<B>} : (tensor<6x8xbf16>) -> tensor<2x3x8xbf16>
  %dh = weft.gelu_tanh_grad %h3, %dg3 {weft.task = #weft.task<B>} : tensor<2x3x8xbf16>
  return %g, %dh : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>
}

// -----

// Left alone: the erf GELU; a GELU of a gemm on another stage; a
// gradient whose output gradient the gemm's other reader also reads, and
// one whose gemm adds a C.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: weft.gemm_gelu_tanh
// CHECK: return
func.func @refused(%x: tensor<6x4xf32>, %w: tensor<4x8xf32>, %c: tensor<6x8xf32>) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) {
  %h = weft.gemm %x, %w : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %g = weft.gelu %h : tensor<6x8xf32>
  %h2 = weft.gemm %x, %w {weft.task = #weft.task<F, stage = 0>} : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %g2 = weft.gelu_tanh %h2 {weft.task = #weft.task<F, stage = 1>} : tensor<6x8xf32>
  %dg = weft.gemm %x, %w : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
  %dh = weft.gelu_tanh_grad %g, %dg : tensor<6x8xf32>
  %twice = weft.mul %dg, %dg : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %dc = weft.gemm %x, %w, %c : (tensor<6x4xf32>, tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
  %dh2 = weft.gelu_tanh_grad %g, %dc : tensor<6x8xf32>
  return %g, %g2, %dh, %twice, %dh2 : tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
}
