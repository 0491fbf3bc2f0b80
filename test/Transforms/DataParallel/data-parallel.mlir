// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-accumulate-microbatches=microbatches=2 --weft-append-optimizer=optimizer=sgd --weft-data-parallel | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-accumulate-microbatches=microbatches=2 --weft-append-optimizer=optimizer=sgd --weft-data-parallel=bucket-cap-mb=0 | FileCheck %s --check-prefix=EACH

// D = 2 replicas, M = 2 micro-batches. The micro-batch sums move up to their
// last contribution and join its task; v's gradient is ready first (v is
// used last in the forward), so the one bucket (25 MiB) holds v then w,
// flattened and all-reduced over the data axis (1) right after w's
// gradient; 1/D and the split back run with the updates. The loss is
// averaged over the replicas too.
// CHECK-LABEL: func.func @step
// CHECK:      %[[DV1:.*]] = weft.gemm {{.*}}weft.task = #weft.task<B, micro_batch = 1>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %[[SV:.*]] = weft.add %{{.*}}, %[[DV1]] {weft.accumulate, weft.task = #weft.task<B, micro_batch = 1>}
// CHECK-NEXT: %[[HALF:.*]] = weft.constant dense<5.000000e-01>
// CHECK-NEXT: %[[GV:.*]] = weft.mul %[[SV]], %[[HALF]] {weft.task = #weft.task<B, micro_batch = 1>}
// CHECK-NEXT: %[[DW1:.*]] = weft.gemm {{.*}}-> tensor<3x2xf32>
// CHECK-NEXT: %[[SW:.*]] = weft.add %{{.*}}, %[[DW1]]
// CHECK-NEXT: weft.constant
// CHECK-NEXT: %[[GW:.*]] = weft.mul %[[SW]]
// CHECK-NEXT: %[[FV:.*]] = weft.reshape %[[GV]] {shape = array<i64: 4>, weft.task = #weft.task<B, micro_batch = 1>}
// CHECK-NEXT: %[[FW:.*]] = weft.reshape %[[GW]] {shape = array<i64: 6>
// CHECK-NEXT: %[[CAT:.*]] = weft.concat %[[FV]], %[[FW]] {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 1>} : (tensor<4xf32>, tensor<6xf32>) -> tensor<10xf32>
// CHECK-NEXT: %[[SUM:.*]] = shard.all_reduce %[[CAT]] on @mesh grid_axes = [1] {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 1>} : tensor<10xf32> -> tensor<10xf32>
// CHECK:      %[[LOSS:.*]] = shard.all_reduce %{{.*}} on @mesh grid_axes = [1] : tensor<f32> -> tensor<f32>
// CHECK:      %[[MEANLOSS:.*]] = weft.mul %[[LOSS]], %{{.*}} : (tensor<f32>, tensor<f32>)
// CHECK:      %[[INVD:.*]] = weft.constant dense<5.000000e-01>
// CHECK-NEXT: %[[MEAN:.*]] = weft.mul %[[SUM]], %[[INVD]] {weft.task = #weft.task<U>}
// CHECK-NEXT: %[[PARTS:.*]]:2 = weft.split %[[MEAN]] {axis = 0 : i64, sizes = array<i64: 4, 6>, weft.task = #weft.task<U>}
// CHECK-NEXT: %[[RV:.*]] = weft.reshape %[[PARTS]]#0 {shape = array<i64: 2, 2>
// CHECK-NEXT: %[[RW:.*]] = weft.reshape %[[PARTS]]#1 {shape = array<i64: 3, 2>
// CHECK-NEXT: weft.sgd %arg1, %[[RW]]
// CHECK-NEXT: weft.sgd %arg2, %[[RV]]
// CHECK-NEXT: return %[[MEANLOSS]]

// bucket-cap-mb=0: a bucket per gradient, v's posted as soon as v's
// gradient exists, before w's gradient GEMM.
// EACH-LABEL: func.func @step
// EACH:      %[[GV:.*]] = weft.mul %{{.*}} {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<2x2xf32>, tensor<f32>)
// EACH-NEXT: shard.all_reduce %[[GV]] on @mesh grid_axes = [1] {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 1>} : tensor<2x2xf32>
// EACH-NEXT: weft.gemm {{.*}}-> tensor<3x2xf32>
// EACH:      shard.all_reduce %{{.*}} on @mesh grid_axes = [1] {weft.bucket = 1 : i64, {{.*}} : tensor<3x2xf32>
// EACH-NOT:  weft.concat
module {
  shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @step(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x2xf32> {weft.param = "w"}, %v: tensor<2x2xf32> {weft.param = "v"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %1 = weft.matmul %0, %v : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
    %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}

// -----

// One replica: nothing to average.
// CHECK-LABEL: func.func @one_replica
// CHECK-NOT: shard.all_reduce
module {
  shard.grid @mesh(shape = 2x1x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @one_replica(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x2xf32> {weft.param = "w"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %1 = weft.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
