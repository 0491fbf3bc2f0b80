// RUN: weft-opt %s --weft-autodiff="microbatches=2 replicas=2" --weft-accumulate-microbatches=microbatches=2 --weft-append-optimizer=optimizer=sgd --weft-data-parallel | FileCheck %s
// RUN: weft-opt %s --weft-autodiff="microbatches=3 replicas=2" --weft-accumulate-microbatches=microbatches=3 --weft-append-optimizer --weft-data-parallel="zero-stage=2 shard-threshold-kb=0" | FileCheck %s --check-prefix=TWO
// RUN: not weft-opt %s --weft-autodiff="replicas=4" --weft-append-optimizer --weft-data-parallel 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not weft-opt %s --weft-autodiff="replicas=0" 2>&1 | FileCheck %s --check-prefix=ZERO

// weft-autodiff seeds each backward with its share of the mean over
// M = 2 micro-batches and D = 2 replicas, 1/4 (DDP's division before the
// all-reduce, `(loss / M).backward()`): the micro-batch sums and the
// bucket's all-reduce are the mean, with no scale after either; the loss,
// a mean per micro-batch and replica, is still averaged.
// CHECK-LABEL: func.func @step
// CHECK-NOT:  weft.seed_
// CHECK:      weft.constant dense<2.500000e-01>
// CHECK-NOT:  weft.constant {{.*}}dense<2.500000e-01>
// CHECK:      %[[SV:.*]] = weft.add {{.*}} : (tensor<2x2xf32>, tensor<2x2xf32>)
// CHECK:      %[[SW:.*]] = weft.add {{.*}} : (tensor<3x2xf32>, tensor<3x2xf32>)
// CHECK-NEXT: %[[FV:.*]] = weft.reshape %[[SV]]
// CHECK-NEXT: %[[FW:.*]] = weft.reshape %[[SW]]
// CHECK-NEXT: %[[CAT:.*]] = weft.concat %[[FV]], %[[FW]]
// CHECK-NEXT: %[[SUM:.*]] = shard.all_reduce %[[CAT]] {{.*}}weft.bucket = 0
// CHECK:      %[[LOSS:.*]] = shard.all_reduce
// CHECK-NEXT: weft.constant dense<5.000000e-01>
// CHECK-NEXT: %[[MEANLOSS:.*]] = weft.mul %[[LOSS]]
// CHECK-NEXT: %[[PARTS:.*]]:2 = weft.split %[[SUM]]
// CHECK-NOT:  weft.mul
// CHECK:      return %[[MEANLOSS]]

// ZeRO stage 2, M = 3, D = 2: one reduce-scatter per micro-batch, the
// pieces summed and updated as they are (each micro-batch's backward was
// seeded with 1/6).
// TWO-LABEL: func.func @step
// TWO:       dense<0.166666672>
// TWO:       %[[R0:.*]] = shard.reduce_scatter {{.*}}micro_batch = 0
// TWO:       %[[R1:.*]] = shard.reduce_scatter {{.*}}micro_batch = 1
// TWO:       %[[R2:.*]] = shard.reduce_scatter {{.*}}micro_batch = 2
// TWO-NEXT:  %[[S01:.*]] = weft.add %[[R0]], %[[R1]]
// TWO:       %[[ALL:.*]] = weft.add %[[S01]], %[[R2]] {weft.accumulate, weft.task = #weft.task<U>}
// TWO-NOT:   weft.mul
// TWO:       weft.split %[[ALL]]
// TWO:       weft.adamw {{.*}}weft.zero_stage = 2

// The seed's replicas must be the mesh's data axis.
// ERR: error: weft-data-parallel: weft-autodiff seeded the backward for 4 replicas, but the mesh's data axis has 2
// ZERO: error: weft-autodiff: microbatches and replicas must be at least 1
module {
  shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @step(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x2xf32> {weft.param = "w"}, %v: tensor<2x2xf32> {weft.param = "v"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %1 = weft.matmul %0, %v : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
    %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
