// RUN: weft-opt %s --weft-autodiff=split-weight-gradients=true | FileCheck %s

// The B/W split of the backward (Qi et al. 2024, Section 2): what the
// gradient of an activation needs is B (the loss's seed, d relu, the dX
// gemm of layer 2), what only parameters' gradients need is W (the dW gemms,
// the bias's sum), which a zero-bubble schedule runs after later B's.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[H:.*]] = weft.relu
// CHECK: %[[DY:.*]] = weft.add %{{.*}}, %{{.*}} {weft.task = #weft.task<B>}
// CHECK-NEXT: %[[DH:.*]] = weft.gemm %[[DY]], %arg4 {{.*}}transB = true, weft.task = #weft.task<B>}
// CHECK-NEXT: %[[DW2:.*]] = weft.gemm %[[H]], %[[DY]] {{.*}}transA = true, weft.task = #weft.task<W>}
// CHECK-NEXT: %[[DZ:.*]] = weft.relu_grad %{{.*}}, %[[DH]] {weft.task = #weft.task<B>}
// CHECK-NEXT: weft.reduce_sum %[[DZ]] {{.*}}weft.task = #weft.task<W>}
// CHECK-NEXT: %[[DB1:.*]] = weft.reshape {{.*}}weft.task = #weft.task<W>}
// CHECK-NEXT: %[[DW1:.*]] = weft.gemm %arg0, %[[DZ]] {{.*}}transA = true, weft.task = #weft.task<W>}
// CHECK-NEXT: return %{{.*}}, %[[DW1]], %[[DB1]], %[[DW2]]
func.func @mlp(%x: tensor<8x3xf32> {weft.input = "x"}, %t: tensor<8x2xf32> {weft.input = "t"},
               %w1: tensor<3x4xf32> {weft.param = "w1"}, %b1: tensor<4xf32> {weft.param = "b1"},
               %w2: tensor<4x2xf32> {weft.param = "w2"})
    -> (tensor<f32> {weft.output = "loss"}) {
  %0 = weft.matmul %x, %w1 : (tensor<8x3xf32>, tensor<3x4xf32>) -> tensor<8x4xf32>
  %1 = weft.add %0, %b1 : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = weft.relu %1 : tensor<8x4xf32>
  %3 = weft.matmul %2, %w2 : (tensor<8x4xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
  %4 = weft.sub %3, %t : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %5 = weft.mul %4, %4 : (tensor<8x2xf32>, tensor<8x2xf32>) -> tensor<8x2xf32>
  %6 = weft.reduce_mean %5 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x2xf32>) -> tensor<f32>
  return %6 : tensor<f32>
}
