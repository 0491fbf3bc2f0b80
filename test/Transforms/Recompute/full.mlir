// RUN: weft-opt %s --weft-autodiff --weft-checkpoint=policy=full | FileCheck %s
// RUN: weft-opt %s --weft-autodiff --weft-checkpoint=policy=none | FileCheck %s --check-prefix=NONE
// RUN: not weft-opt %s --weft-checkpoint=policy=half 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: weft-opt %s --weft-autodiff=microbatches=2 --weft-accumulate-microbatches=microbatches=2 --weft-checkpoint=policy=full | FileCheck %s --check-prefix=MB

// Full recompute of a two-layer MLP: the forward ops the backward reads
// (both matmuls, the relu and the dropout) are cloned, in order, right
// before the first backward op, tagged backward + recompute; the backward
// reads the clones, so the forward results die in the forward. The dropout
// clone keeps its original's rng_id: the same mask.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[H:.*]] = weft.matmul %arg0, %arg1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[R:.*]] = weft.relu %[[H]]
// CHECK: %[[D:.*]], %[[M:.*]] = weft.dropout %[[R]] {{.*}}weft.rng_id = 0 : i64
// CHECK: weft.reduce_mean
// CHECK: %[[H2:.*]] = weft.matmul %arg0, %arg1 {weft.task = #weft.task<R>}
// CHECK-NEXT: %[[R2:.*]] = weft.relu %[[H2]] {weft.task = #weft.task<R>}
// CHECK-NEXT: %[[D2:.*]], %[[M2:.*]] = weft.dropout %[[R2]] {{.*}}weft.rng_id = 0 : i64, weft.task = #weft.task<R>
// CHECK-NOT: #weft.task<R
// CHECK: weft.dropout_grad %{{.*}}, %[[M2]]
// CHECK: weft.relu_grad %[[H2]]
// CHECK-NOT: %[[H]]
// CHECK: return

// With micro-batches sharing their constants (the backward's seed made
// once, before them all), each micro-batch's recompute still follows its
// own forward, right before its own first backward op.
// MB: weft.constant dense<5.000000e-01>
// MB-NOT: #weft.task<R
// MB: weft.reduce_mean {{.*}}micro_batch = 0
// MB-NEXT: weft.slice {{.*}}weft.task = #weft.task<R, micro_batch = 0
// MB: weft.reduce_mean {{.*}}micro_batch = 1
// MB-NEXT: weft.slice {{.*}}weft.task = #weft.task<R, micro_batch = 1

// NONE-NOT: #weft.task<R
// BAD: weft-checkpoint: unknown policy 'half' (expected none, full or selective)
func.func @mlp(%x: tensor<4x8xf32> {weft.input = "x"}, %w0: tensor<8x8xf32> {weft.param = "w0"},
               %w1: tensor<8x8xf32> {weft.param = "w1"}) -> tensor<f32> {
  %h = weft.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = weft.relu %h : tensor<4x8xf32>
  %d, %mask = weft.dropout %r {ratio = 0.5 : f64, training = true} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  %y = weft.matmul %d, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
