// RUN: weft-opt %s --weft-autodiff=microbatches=2 --weft-accumulate-microbatches=microbatches=2 --weft-append-optimizer=optimizer=sgd --weft-hoist-accumulation | FileCheck %s
// RUN: weft-opt %s --weft-autodiff=microbatches=2 --weft-accumulate-microbatches=microbatches=2 --weft-append-optimizer=optimizer=sgd | FileCheck %s --check-prefix=APPENDED

// Two micro-batches: each weight's gradient sum adds micro-batch 1's
// gradient right after the GEMM that writes it, in that GEMM's task (B of
// micro-batch 1): w2's sum before w1's gradient is computed, so the stage
// never holds both weights' own micro-batch gradients beside their sums.
// CHECK-LABEL: func.func @two_layers
// CHECK: %[[G2:.*]] = weft.gemm %{{.*}} {beta = 0.000000e+00 : f64, transA = true, weft.task = #weft.task<B, micro_batch = 1>}
// CHECK-NEXT: weft.add %{{.*}}, %[[G2]] {weft.accumulate, weft.task = #weft.task<B, micro_batch = 1>}
// CHECK-NEXT: weft.relu_grad
// CHECK-NEXT: %[[G1:.*]] = weft.gemm %{{.*}} {beta = 0.000000e+00 : f64, transA = true, weft.task = #weft.task<B, micro_batch = 1>}
// CHECK-NEXT: weft.add %{{.*}}, %[[G1]] {weft.accumulate, weft.task = #weft.task<B, micro_batch = 1>}
// Without the pass the sums follow the last micro-batch's whole step.
// APPENDED-LABEL: func.func @two_layers
// APPENDED: weft.relu_grad {{.*}}micro_batch = 1
// APPENDED-NEXT: weft.gemm
// APPENDED-NEXT: weft.add %{{.*}}, %{{.*}} {weft.accumulate} :
// APPENDED-NEXT: weft.add %{{.*}}, %{{.*}} {weft.accumulate} :
func.func @two_layers(%x: tensor<2x4xf32> {weft.input = "x"},
                      %w1: tensor<4x4xf32> {weft.param = "w1"},
                      %w2: tensor<4x4xf32> {weft.param = "w2"}) -> tensor<f32> {
  %h = weft.matmul %x, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %r = weft.relu %h : tensor<2x4xf32>
  %y = weft.matmul %r, %w2 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
