// RUN: weft-opt %s --weft-autodiff --weft-accumulate-microbatches=microbatches=3 --weft-append-optimizer --weft-data-parallel="zero-stage=2 shard-threshold-kb=0" | FileCheck %s --check-prefix=TWO
// RUN: weft-opt %s --weft-autodiff --weft-accumulate-microbatches=microbatches=3 --weft-append-optimizer --weft-data-parallel="zero-stage=3 shard-threshold-kb=0" | FileCheck %s --check-prefix=THREE
// RUN: not weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=4" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=1 shard-threshold-kb=-1" 2>&1 | FileCheck %s --check-prefix=THRESHOLD

// Stage 2 with M = 3 micro-batches over D = 2: the bucket (v: 2 pieces of
// 3; w: 9 padded to 10, 2 pieces of 5) is reduce-scattered once per
// micro-batch, right after that micro-batch's gradients; micro-batch 0's
// piece is added once 2's is posted, the last at the update, scaled by
// 1/(M D). No whole gradient is summed across micro-batches.
// TWO-LABEL: func.func @step
// TWO-NOT: weft.add %{{.*}} : (tensor<3x3xf32>, tensor<3x3xf32>)
// TWO: %[[R0:.*]] = shard.reduce_scatter %{{.*}} {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<2x8xf32> -> tensor<1x8xf32>
// TWO-NOT: weft.add %{{.*}} : (tensor<3x3xf32>, tensor<3x3xf32>)
// TWO: %[[R1:.*]] = shard.reduce_scatter %{{.*}} {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 1>} : tensor<2x8xf32> -> tensor<1x8xf32>
// TWO: %[[R2:.*]] = shard.reduce_scatter %{{.*}} {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 2>} : tensor<2x8xf32> -> tensor<1x8xf32>
// TWO-NEXT: %[[S01:.*]] = weft.add %[[R0]], %[[R1]] {weft.accumulate, weft.task = #weft.task<B, micro_batch = 2>}
// TWO: %[[ALL:.*]] = weft.add %[[S01]], %[[R2]] {weft.accumulate, weft.task = #weft.task<U>}
// TWO-NEXT: %[[INV:.*]] = weft.constant dense<0.16666
// TWO-NEXT: weft.mul %[[ALL]], %[[INV]] {weft.task = #weft.task<U>}
// TWO: shard.all_slice
// TWO: weft.adamw {{.*}}weft.zero_stage = 2
// TWO: shard.all_gather {{.*}}weft.bucket = 0 : i64
// TWO: weft.assign
// TWO-NOT: weft.add %{{.*}} : (tensor<3x3xf32>, tensor<3x3xf32>)

// Stage 3: the parameters are their pieces; each op reading one gets its
// own all-gather right before it, in its task (forward and backward, every
// micro-batch); the update writes the piece in place, nothing is gathered
// after it.
// THREE-LABEL: func.func @step
// THREE-SAME: %[[W:[a-z0-9]+]]: tensor<5xf32> {weft.flat_shard = array<i64: 3, 3>, weft.param = "w"}, %[[V:[a-z0-9]+]]: tensor<3xf32> {weft.flat_shard = array<i64: 3, 2>, weft.param = "v"}
// THREE-SAME: -> (tensor<f32>, tensor<5xf32> {weft.update = "w"}, tensor<5xf32> {weft.update = "w.exp_avg"}, tensor<5xf32> {weft.update = "w.exp_avg_sq"}, tensor<3xf32> {weft.update = "v"}
// THREE: %[[GW:.*]] = shard.all_gather %[[W]] on @mesh grid_axes = [1] gather_axis = 0 {weft.task = #weft.task<F, micro_batch = 0>} : tensor<5xf32> -> tensor<10xf32>
// THREE-NEXT: %[[UW:.*]] = weft.slice %[[GW]] {ends = array<i64: 9>
// THREE-NEXT: %[[RW:.*]] = weft.reshape %[[UW]] {shape = array<i64: 3, 3>, weft.task = #weft.task<F, micro_batch = 0>}
// THREE-NEXT: weft.matmul %{{.*}}, %[[RW]] {weft.task = #weft.task<F, micro_batch = 0>}
// THREE: %[[GV:.*]] = shard.all_gather %[[V]] {{.*}}{weft.task = #weft.task<F, micro_batch = 0>} : tensor<3xf32> -> tensor<6xf32>
// THREE-NEXT: %[[RV:.*]] = weft.reshape %[[GV]] {shape = array<i64: 3, 2>, weft.task = #weft.task<F, micro_batch = 0>}
// THREE-NEXT: weft.matmul %{{.*}}, %[[RV]] {weft.task = #weft.task<F, micro_batch = 0>}
// THREE: %[[BV:.*]] = shard.all_gather %[[V]] {{.*}}{weft.task = #weft.task<B, micro_batch = 0>}
// THREE-NEXT: %[[BRV:.*]] = weft.reshape %[[BV]]
// THREE-NEXT: weft.gemm %{{.*}}, %[[BRV]] {{.*}}transB = true, weft.task = #weft.task<B, micro_batch = 0
// THREE: shard.all_gather %[[W]] {{.*}}{weft.task = #weft.task<F, micro_batch = 1>}
// THREE: shard.all_gather %[[W]] {{.*}}{weft.task = #weft.task<F, micro_batch = 2>}
// THREE: %[[NV:.*]], %{{.*}}, %{{.*}} = weft.adamw %[[V]], {{.*}}weft.zero_stage = 3 {{.*}} -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// THREE: %[[NW:.*]], %{{.*}}, %{{.*}} = weft.adamw %[[W]], {{.*}} -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// THREE-NOT: shard.all_gather
// THREE-NOT: weft.assign
// THREE: return %{{.*}}, %[[NW]], %{{.*}}, %{{.*}}, %[[NV]]

// STAGE: error: weft-data-parallel: zero-stage 4 is not one of 0 (replicated), 1 (optimizer state sharded), 2 (and gradients), 3 (and parameters)
// THRESHOLD: error: weft-data-parallel: shard-threshold-kb must be >= 0
module {
  shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @step(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x3xf32> {weft.param = "w"}, %v: tensor<3x2xf32> {weft.param = "v"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
    %1 = weft.matmul %0, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
