// RUN: weft-opt %s --weft-create-device-mesh="data=4 data-shard=2" --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=1 shard-threshold-kb=0" | FileCheck %s
// RUN: weft-opt %s --weft-create-device-mesh="data=4 data-shard=2" --weft-autodiff --weft-append-optimizer --weft-data-parallel="zero-stage=3 shard-threshold-kb=0" | FileCheck %s --check-prefix=THREE
// RUN: not weft-opt %s --weft-create-device-mesh="data=4 data-shard=3" 2>&1 | FileCheck %s --check-prefix=DIVIDE

// ZeRO over groups of S = 2 of the D = 4 replicas (MindSpore's shard_size):
// the zero mesh views the same devices as pipeline x data_replica x
// data_shard x tensor; the bucket (w: 9 padded to 10, pieces of 5; v:
// pieces of 3) is reduce-scattered within the group (data_shard), the
// piece all-reduced across the groups (data_replica), scaled by 1/D = 1/4
// and the updated pieces gathered within the group.
// CHECK: shard.grid @mesh(shape = 1x4x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
// CHECK: shard.grid @zero_mesh(shape = 1x2x2x1) {weft.mesh_axes = ["pipeline", "data_replica", "data_shard", "tensor"]}
// CHECK-LABEL: func.func @step
// CHECK: %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @zero_mesh grid_axes = [2] scatter_axis = 0 {weft.bucket = 0 : i64{{.*}}} : tensor<2x8xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %[[AR:.*]] = shard.all_reduce %[[RS]] on @zero_mesh grid_axes = [1] {weft.bucket = 0 : i64{{.*}}} : tensor<1x8xf32> -> tensor<1x8xf32>
// CHECK: weft.constant dense<2.500000e-01>
// CHECK: shard.all_slice %{{.*}} on @zero_mesh grid_axes = [2]
// CHECK: weft.adamw {{.*}}weft.zero_stage = 1
// CHECK: shard.all_gather %{{.*}} on @zero_mesh grid_axes = [2] gather_axis = 0 {weft.bucket = 0 : i64{{.*}}} : tensor<1x8xf32> -> tensor<2x8xf32>
// CHECK: weft.assign

// Stage 3: parameters are pieces of the group, gathered within it.
// THREE-LABEL: func.func @step
// THREE-SAME: tensor<5xf32> {weft.flat_shard = array<i64: 3, 3>, weft.param = "w"}
// THREE: shard.all_gather %{{.*}} on @zero_mesh grid_axes = [2] gather_axis = 0 {{.*}}: tensor<5xf32> -> tensor<10xf32>

// DIVIDE: error: weft-create-device-mesh: a ZeRO group of 3 does not divide the data axis (4)
module {
  func.func @step(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x3xf32> {weft.param = "w"}, %v: tensor<3x2xf32> {weft.param = "v"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
    %1 = weft.matmul %0, %v : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %2 = weft.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %2 : tensor<f32>
  }
}
