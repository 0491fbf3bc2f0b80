// RUN: weft-opt %s --weft-autodiff --weft-accumulate-microbatches=microbatches=2 --weft-append-optimizer --weft-data-parallel="zero-stage=1 shard-threshold-kb=0 bucket-cap-mb=0" | FileCheck %s
// RUN: weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=1 shard-threshold-kb=0 bucket-cap-mb=0 zero-prefetch=true" --weft-overlap-collectives | FileCheck %s --check-prefix=POSTED
// RUN: not weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=3 zero-prefetch=true" 2>&1 | FileCheck %s --check-prefix=STAGE3
// RUN: not weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-prefetch=true" 2>&1 | FileCheck %s --check-prefix=STAGE3
// RUN: weft-opt %s --weft-autodiff --weft-accumulate-microbatches=microbatches=2 --weft-append-optimizer --weft-data-parallel="zero-stage=1 shard-threshold-kb=0 bucket-cap-mb=0 zero-prefetch=true" | FileCheck %s --check-prefix=PREFETCH

// Without prefetch (stage 1): the parameters are whole arguments, each
// bucket's updated pieces gathered and assigned after the update.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{[a-z0-9]+}}: tensor<3x3xf32> {weft.param = "w"}
// CHECK: weft.adamw
// CHECK: shard.all_gather
// CHECK: weft.assign

// MindSpore's schedule (zero-prefetch): the parameters are pieces between
// steps; one gather per bucket (cap 0: one bucket per parameter, v's
// bucket 0 ready first, w's bucket 1) posted before the first op reading
// a parameter, w's (read first by the forward) first; each parameter's
// column sliced out before its first reader (v needs no unpadding: one
// reshape), every later reader (the second micro-batch, the backward)
// reading the same whole value; the update writes the piece in place and
// nothing is gathered after it.
// PREFETCH-LABEL: func.func @step
// PREFETCH-SAME: %[[W:[a-z0-9]+]]: tensor<5xf32> {weft.flat_shard = array<i64: 3, 3>, weft.param = "w"}, %[[V:[a-z0-9]+]]: tensor<3xf32> {weft.flat_shard = array<i64: 3, 2>, weft.param = "v"}
// PREFETCH: %[[RW:.*]] = weft.reshape %[[W]] {shape = array<i64: 1, 5>, weft.task = #weft.task<F, micro_batch = 0>}
// PREFETCH-NEXT: %[[GW:.*]] = shard.all_gather %[[RW]] on @mesh grid_axes = [1] gather_axis = 0 {weft.bucket = 1 : i64, weft.task = #weft.task<F, micro_batch = 0>} : tensor<1x5xf32> -> tensor<2x5xf32>
// PREFETCH-NEXT: %[[RV:.*]] = weft.reshape %[[V]] {shape = array<i64: 1, 3>, weft.task = #weft.task<F, micro_batch = 0>}
// PREFETCH-NEXT: %[[GV:.*]] = shard.all_gather %[[RV]] {{.*}}{weft.bucket = 0 : i64, weft.task = #weft.task<F, micro_batch = 0>} : tensor<1x3xf32> -> tensor<2x3xf32>
// PREFETCH-NEXT: %[[CW:.*]] = weft.slice %[[GW]] {ends = array<i64: 2, 5>
// PREFETCH-NEXT: %[[FW:.*]] = weft.reshape %[[CW]] {shape = array<i64: 10>
// PREFETCH-NEXT: %[[UW:.*]] = weft.slice %[[FW]] {ends = array<i64: 9>
// PREFETCH-NEXT: %[[WW:.*]] = weft.reshape %[[UW]] {shape = array<i64: 3, 3>
// PREFETCH-NEXT: weft.matmul %{{.*}}, %[[WW]] {weft.task = #weft.task<F, micro_batch = 0>}
// PREFETCH-NEXT: %[[CV:.*]] = weft.slice %[[GV]]
// PREFETCH-NEXT: %[[WV:.*]] = weft.reshape %[[CV]] {shape = array<i64: 3, 2>
// PREFETCH-NEXT: weft.matmul %{{.*}}, %[[WV]] {weft.task = #weft.task<F, micro_batch = 0>}
// PREFETCH-NOT: shard.all_gather
// PREFETCH: weft.matmul %{{.*}}, %[[WW]] {weft.task = #weft.task<F, micro_batch = 1>}
// PREFETCH-NOT: shard.all_gather
// PREFETCH: %[[NW:.*]], %{{.*}}, %{{.*}} = weft.adamw %[[W]], {{.*}}weft.zero_stage = 1 {{.*}} -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// PREFETCH: %[[NV:.*]], %{{.*}}, %{{.*}} = weft.adamw %[[V]], {{.*}} -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// PREFETCH-NOT: shard.all_gather
// PREFETCH-NOT: weft.assign
// PREFETCH: return %{{.*}}, %[[NW]], %{{.*}}, %{{.*}}, %[[NV]]

// The overlap pass keeps both posts at the start and sinks each wait to
// its parameter's first reader: v's gather is in flight during w's matmul.
// POSTED-LABEL: func.func @step
// POSTED: %[[GW:.*]] = shard.all_gather {{.*}}weft.bucket = 1
// POSTED: %[[GV:.*]] = shard.all_gather {{.*}}weft.bucket = 0
// POSTED-NEXT: weft.wait_collective %[[GW]]
// POSTED: weft.matmul
// POSTED: weft.wait_collective %[[GV]]
// POSTED: weft.matmul

// STAGE3: error: weft-data-parallel: zero-prefetch needs zero-stage 1 or 2 (stage 3 gathers each parameter at its uses)
module {
  shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @step(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x3xf32> {weft.param = "w"}, %v: tensor<3x2xf32> {weft.param = "v"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
    %1 = weft.matmul %0, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
