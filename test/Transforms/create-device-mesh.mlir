// The last case is malformed: every RUN line fails on it (`not`).
// RUN: not weft-opt %s --split-input-file --weft-create-device-mesh="pipeline=4" 2>/dev/null | FileCheck %s
// RUN: not weft-opt %s --split-input-file --weft-create-device-mesh="pipeline=2 tensor=2" -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIFF
// RUN: not weft-opt %s --split-input-file --weft-create-device-mesh="data=0" -o /dev/null 2>&1 | FileCheck %s --check-prefix=SIZE

// The mesh: pipeline x data x tensor, names in weft.mesh_axes.
// CHECK: shard.grid @mesh(shape = 4x1x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
// CHECK-LABEL: func.func @main
// SIZE: error: weft-create-device-mesh: data size 0 must be at least 1
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----
// An existing mesh that is the same is kept, once.
// CHECK: shard.grid @mesh(shape = 4x1x1)
// CHECK-NOT: shard.grid
// DIFF: error: weft-create-device-mesh: the module's device mesh differs from the requested 2x1x2 (pipeline x data x tensor)
shard.grid @mesh(shape = 4x1x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----
// DIFF: error: the device mesh needs 'weft.mesh_axes': one axis name per dim of its shape
shard.grid @mesh(shape = 4x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
