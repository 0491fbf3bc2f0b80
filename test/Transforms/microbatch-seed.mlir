// RUN: weft-opt %s --split-input-file --weft-autodiff=microbatches=2 --weft-accumulate-microbatches=microbatches=2 | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-accumulate-microbatches=microbatches=2 | FileCheck %s --check-prefix=AFTER
// RUN: not weft-opt %s --split-input-file --weft-autodiff=microbatches=2 --weft-accumulate-microbatches=microbatches=4 2>&1 | FileCheck %s --check-prefix=ERR

// M = 2: weft-autodiff seeds each micro-batch's backward with 1/2, so the
// gradients are only summed; the loss is still the mean of the two.
// CHECK-LABEL: func.func @step
// CHECK-NOT: weft.seed_microbatches
// The micro-batches share their constants, made once before them all.
// CHECK-NEXT: %[[SEED:.*]] = weft.constant dense<5.000000e-01>
// CHECK: weft.slice %arg0 {{.*}}micro_batch = 0
// CHECK: weft.mul %[[SEED]]
// CHECK: weft.slice %arg0 {{.*}}micro_batch = 1
// CHECK-NOT: weft.constant {{.*}}dense<5.000000e-01>
// CHECK: weft.mul %[[SEED]]
// CHECK: %[[L:.*]] = weft.add
// CHECK: %[[DW:.*]] = weft.add
// CHECK: %[[HALF:.*]] = weft.constant dense<5.000000e-01>
// CHECK-NEXT: %[[MEAN:.*]] = weft.mul %[[L]], %[[HALF]]
// CHECK-NEXT: return %[[MEAN]], %[[DW]]
// Without the seed, the sum of the gradients is scaled after it.
// AFTER-LABEL: func.func @step
// AFTER: weft.constant dense<1.000000e+00>
// AFTER: %[[L:.*]] = weft.add
// AFTER: %[[DW:.*]] = weft.add
// AFTER: weft.mul %[[L]]
// AFTER: %[[SCALED:.*]] = weft.mul %[[DW]]
// AFTER-NEXT: return %{{.*}}, %[[SCALED]]
// ERR: error: weft-accumulate-microbatches: weft-autodiff seeded the backward for 2 micro-batches, not 4
func.func @step(%x: tensor<4x3xf32> {weft.input = "x"},
                %w: tensor<3x1xf32> {weft.param = "w"}) -> tensor<f32> {
  %y = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x1xf32>) -> tensor<4x1xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x1xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// f16's seed is the loss scale, times 1/2.
// CHECK-LABEL: func.func @scaled
// CHECK: %[[H:.*]] = weft.constant dense<5.000000e-01>
// CHECK: %[[S:.*]] = weft.slice %arg2
// CHECK-NEXT: %[[R:.*]] = weft.reshape %[[S]]
// CHECK-NEXT: weft.mul %[[R]], %[[H]]
func.func @scaled(%x: tensor<4x3xf32> {weft.input = "x"},
                  %w: tensor<3x1xf32> {weft.param = "w"},
                  %s: tensor<3xf32> {weft.loss_scaler}) -> tensor<f32> {
  %y = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x1xf32>) -> tensor<4x1xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x1xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

