// RUN: weft-opt %s --weft-autodiff --weft-append-optimizer --weft-data-parallel=zero-stage=1 | FileCheck %s

// ZeRO stage 1 over D = 2 replicas: one bucket of v (3x2, ready first)
// and w (3x3), 15 elements, zero-padded to 16 (the flat split) and
// reduce-scattered into this replica's 8; the replica's 8 elements of the
// flattened parameters (all_slice) are updated with 8-element Adam state
// that replaces the per-parameter state, all-gathered, unpadded, split and
// assigned back into v and w.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3x3xf32> {weft.param = "w"}, %[[V:[a-z0-9]+]]: tensor<3x2xf32> {weft.param = "v"}, %[[M:[a-z0-9]+]]: tensor<8xf32> {weft.optimizer_state = "zero.bucket0.exp_avg"}, %[[S:[a-z0-9]+]]: tensor<8xf32> {weft.optimizer_state = "zero.bucket0.exp_avg_sq"})
// CHECK-SAME: -> (tensor<f32>, tensor<3x3xf32> {weft.update = "w"}, tensor<3x2xf32> {weft.update = "v"}, tensor<8xf32> {weft.update = "zero.bucket0.exp_avg"}, tensor<8xf32> {weft.update = "zero.bucket0.exp_avg_sq"})
// CHECK-NOT: weft.optimizer_state = "w.exp_avg"
// CHECK: %[[GV:.*]] = weft.reshape %{{.*}} {shape = array<i64: 6>, weft.phase = "backward"} : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK: %[[GW:.*]] = weft.reshape %{{.*}} {shape = array<i64: 9>, weft.phase = "backward"} : (tensor<3x3xf32>) -> tensor<9xf32>
// CHECK: %[[PAD:.*]] = weft.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK: %[[G:.*]] = weft.concat %[[GV]], %[[GW]], %[[PAD]] {axis = 0 : i64, weft.phase = "backward"} : (tensor<6xf32>, tensor<9xf32>, tensor<1xf32>) -> tensor<16xf32>
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[G]] on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 0 : i64, weft.phase = "backward"} : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[GS:.*]] = weft.mul %[[RS]], %{{.*}} {weft.phase = "optimizer"} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK: %[[PV:.*]] = weft.reshape %[[V]] {shape = array<i64: 6>
// CHECK: %[[PW:.*]] = weft.reshape %[[W]] {shape = array<i64: 9>
// CHECK: %[[P:.*]] = weft.concat %[[PV]], %[[PW]], %{{.*}} {axis = 0 : i64, weft.phase = "optimizer"}
// CHECK: %[[PS:.*]] = shard.all_slice %[[P]] on @mesh grid_axes = [1] slice_axis = 0 {weft.phase = "optimizer"} : tensor<16xf32> -> tensor<8xf32>
// CHECK: %[[NEW:.*]], %[[NM:.*]], %[[NS:.*]] = weft.adamw %[[PS]], %[[GS]], %[[M]], %[[S]] {{.*}} : tensor<8xf32>
// CHECK: %[[ALL:.*]] = shard.all_gather %[[NEW]] on @mesh grid_axes = [1] gather_axis = 0 {weft.bucket = 0 : i64, weft.phase = "optimizer"} : tensor<8xf32> -> tensor<16xf32>
// CHECK: %[[UNPAD:.*]] = weft.slice %[[ALL]] {ends = array<i64: 15>, starts = array<i64: 0>, steps = array<i64: 1>, weft.phase = "optimizer"}
// CHECK: %[[PARTS:.*]]:2 = weft.split %[[UNPAD]] {axis = 0 : i64, sizes = array<i64: 6, 9>
// CHECK: %[[RV:.*]] = weft.reshape %[[PARTS]]#0 {shape = array<i64: 3, 2>
// CHECK: %[[AV:.*]] = weft.assign %[[V]], %[[RV]] {weft.phase = "optimizer"} : tensor<3x2xf32>
// CHECK: %[[RW:.*]] = weft.reshape %[[PARTS]]#1 {shape = array<i64: 3, 3>
// CHECK: %[[AW:.*]] = weft.assign %[[W]], %[[RW]]
// CHECK: return %{{.*}}, %[[AW]], %[[AV]], %[[NM]], %[[NS]]
module {
  shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @step(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x3xf32> {weft.param = "w"}, %v: tensor<3x2xf32> {weft.param = "v"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
    %1 = weft.matmul %0, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
