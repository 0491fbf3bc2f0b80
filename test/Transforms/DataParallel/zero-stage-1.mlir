// RUN: weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=1 shard-threshold-kb=0" | FileCheck %s
// RUN: weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=1" | FileCheck %s --check-prefix=SMALL

// ZeRO stage 1 over D = 2 replicas, one bucket of v (3x2, ready first) and
// w (3x3). The flat split: v's 6 elements are 2 pieces of 3, w's 9 are
// padded to 10, 2 pieces of 5; the bucket is [2, 3 + 5] rank-major (each
// tensor a column block), so one reduce-scatter hands this replica its
// piece of both sums. Each piece of v and w (all_slice) is updated with
// state of its size, which keeps its name and gains weft.flat_shard; the
// updated pieces are all-gathered as one [1, 8] row, split, unpadded and
// assigned back into v and w.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x3xf32> {weft.param = "w"}, %[[V:[a-z0-9]+]]: tensor<3x2xf32> {weft.param = "v"}, %[[VM:[a-z0-9]+]]: tensor<3xf32> {weft.flat_shard = array<i64: 3, 2>, weft.optimizer_state = "v.exp_avg"}, %[[VS:[a-z0-9]+]]: tensor<3xf32> {weft.flat_shard = array<i64: 3, 2>, weft.optimizer_state = "v.exp_avg_sq"}, %[[WM:[a-z0-9]+]]: tensor<5xf32> {weft.flat_shard = array<i64: 3, 3>, weft.optimizer_state = "w.exp_avg"}, %[[WS:[a-z0-9]+]]: tensor<5xf32> {weft.flat_shard = array<i64: 3, 3>, weft.optimizer_state = "w.exp_avg_sq"})
// CHECK-SAME: -> (tensor<f32>, tensor<3x3xf32> {weft.update = "w"}, tensor<5xf32> {weft.update = "w.exp_avg"}, tensor<5xf32> {weft.update = "w.exp_avg_sq"}, tensor<3x2xf32> {weft.update = "v"}, tensor<3xf32> {weft.update = "v.exp_avg"}, tensor<3xf32> {weft.update = "v.exp_avg_sq"})
// CHECK: %[[GV:.*]] = weft.reshape %{{.*}} {shape = array<i64: 2, 3>, weft.task = #weft.task<B>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK: %[[GW:.*]] = weft.reshape %{{.*}} {shape = array<i64: 9>, weft.task = #weft.task<B>} : (tensor<3x3xf32>) -> tensor<9xf32>
// CHECK: %[[PAD:.*]] = weft.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK: %[[GWP:.*]] = weft.concat %[[GW]], %[[PAD]] {axis = 0 : i64, weft.task = #weft.task<B>} : (tensor<9xf32>, tensor<1xf32>) -> tensor<10xf32>
// CHECK: %[[GWR:.*]] = weft.reshape %[[GWP]] {shape = array<i64: 2, 5>
// CHECK: %[[G:.*]] = weft.concat %[[GV]], %[[GWR]] {axis = 1 : i64, weft.task = #weft.task<B>} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[G]] on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 0 : i64, weft.task = #weft.task<B>} : tensor<2x8xf32> -> tensor<1x8xf32>
// CHECK: %[[GS:.*]] = weft.mul %[[RS]], %{{.*}} {weft.task = #weft.task<U>} : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
// CHECK: %[[GP:.*]]:2 = weft.split %[[GS]] {axis = 1 : i64, sizes = array<i64: 3, 5>
// CHECK: %[[PV:.*]] = weft.reshape %[[V]] {shape = array<i64: 6>
// CHECK: %[[SV:.*]] = shard.all_slice %[[PV]] on @mesh grid_axes = [1] slice_axis = 0 {weft.task = #weft.task<U>} : tensor<6xf32> -> tensor<3xf32>
// CHECK: %[[GV3:.*]] = weft.reshape %[[GP]]#0 {shape = array<i64: 3>
// CHECK: %[[NV:.*]], %[[NVM:.*]], %[[NVS:.*]] = weft.adamw %[[SV]], %[[GV3]], %[[VM]], %[[VS]] {{.*}}weft.flat_shard = array<i64: 3, 2>, weft.task = #weft.task<U>, weft.zero_stage = 1 : i64{{.*}} -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK: %[[SW:.*]] = shard.all_slice %{{.*}} on @mesh grid_axes = [1] slice_axis = 0 {weft.task = #weft.task<U>} : tensor<10xf32> -> tensor<5xf32>
// CHECK: %[[NW:.*]], %[[NWM:.*]], %[[NWS:.*]] = weft.adamw %[[SW]], %{{.*}}, %[[WM]], %[[WS]] {{.*}} -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>)
// CHECK: %[[RV:.*]] = weft.reshape %[[NV]] {shape = array<i64: 1, 3>
// CHECK: %[[RW:.*]] = weft.reshape %[[NW]] {shape = array<i64: 1, 5>
// CHECK: %[[ROW:.*]] = weft.concat %[[RV]], %[[RW]] {axis = 1 : i64
// CHECK: %[[ALL:.*]] = shard.all_gather %[[ROW]] on @mesh grid_axes = [1] gather_axis = 0 {weft.bucket = 0 : i64, weft.task = #weft.task<U>} : tensor<1x8xf32> -> tensor<2x8xf32>
// CHECK: %[[COLS:.*]]:2 = weft.split %[[ALL]] {axis = 1 : i64, sizes = array<i64: 3, 5>
// CHECK: %[[AV:.*]] = weft.reshape %[[COLS]]#0 {shape = array<i64: 3, 2>
// CHECK: %[[AVS:.*]] = weft.assign %[[V]], %[[AV]] {weft.task = #weft.task<U>} : tensor<3x2xf32>
// CHECK: %[[FW:.*]] = weft.reshape %[[COLS]]#1 {shape = array<i64: 10>
// CHECK: %[[UW:.*]] = weft.slice %[[FW]] {ends = array<i64: 9>, starts = array<i64: 0>, steps = array<i64: 1>, weft.task = #weft.task<U>}
// CHECK: %[[AW:.*]] = weft.reshape %[[UW]] {shape = array<i64: 3, 3>
// CHECK: %[[AWS:.*]] = weft.assign %[[W]], %[[AW]]
// CHECK: return %{{.*}}, %[[AWS]], %[[NWM]], %[[NWS]], %[[AVS]], %[[NVM]], %[[NVS]]

// Under the default 64 KiB threshold both stay replicated: one all-reduce.
// SMALL-NOT: reduce_scatter
// SMALL: shard.all_reduce %{{.*}} {weft.bucket = 0 : i64
// SMALL-NOT: reduce_scatter
// SMALL-NOT: weft.flat_shard
module {
  shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @step(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x3xf32> {weft.param = "w"}, %v: tensor<3x2xf32> {weft.param = "v"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
    %1 = weft.matmul %0, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
