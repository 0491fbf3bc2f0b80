// weft-overlap-collectives keeps at most two of a micro-batch's ZeRO
// gradient buckets in flight: the oldest reduce-scatter is waited for
// before the third bucket is packed, so the rank never holds more than two
// unsharded buckets (waiting each at the end of the backward held them all).
// RUN: weft-opt %s --split-input-file --weft-overlap-collectives | FileCheck %s

shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// CHECK-LABEL: func.func @three_buckets
// CHECK: %[[B0:.*]] = weft.concat %arg0, %arg1
// CHECK-NEXT: %[[R0:.*]] = shard.reduce_scatter %[[B0]]
// CHECK: %[[B1:.*]] = weft.concat %[[G2:.*]], %[[G3:.*]] {
// CHECK-NEXT: %[[R1:.*]] = shard.reduce_scatter %[[B1]]
// CHECK: %[[W0:.*]] = weft.wait_collective %[[R0]], %[[B0]]
// CHECK: %[[B2:.*]] = weft.concat
// CHECK-NEXT: %[[R2:.*]] = shard.reduce_scatter %[[B2]]
// CHECK: weft.add %[[W0]]
func.func @three_buckets(%g0: tensor<4xf32>, %g1: tensor<4xf32>,
                         %x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %b0 = weft.concat %g0, %g1 {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r0 = shard.reduce_scatter %b0 on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<4xf32>
  %g2 = weft.neg %x {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %g3 = weft.exp %x {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %b1 = weft.concat %g2, %g3 {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r1 = shard.reduce_scatter %b1 on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 1 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<4xf32>
  %g4 = weft.neg %g3 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %g5 = weft.exp %g3 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %b2 = weft.concat %g4, %g5 {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r2 = shard.reduce_scatter %b2 on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 2 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<4xf32>
  %s0 = weft.add %r0, %x {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s1 = weft.add %r1, %x {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s2 = weft.add %r2, %x {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s0, %s1, %s2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// Without ZeRO the buckets are all-reduced and read by the update, so the
// reduced buckets live until then whenever they are waited for: their
// waits stay at the end of the backward.
// CHECK-LABEL: func.func @all_reduce_buckets
// CHECK: shard.all_reduce
// CHECK-NEXT: shard.all_reduce
// CHECK-NEXT: shard.all_reduce
// CHECK-NEXT: weft.wait_collective
// CHECK-NEXT: weft.wait_collective
// CHECK-NEXT: weft.wait_collective
func.func @all_reduce_buckets(%g0: tensor<8xf32>, %g1: tensor<8xf32>,
                              %g2: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %r0 = shard.all_reduce %g0 on @mesh grid_axes = [1] {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<8xf32>
  %r1 = shard.all_reduce %g1 on @mesh grid_axes = [1] {weft.bucket = 1 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<8xf32>
  %r2 = shard.all_reduce %g2 on @mesh grid_axes = [1] {weft.bucket = 2 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<8xf32>
  %s0 = weft.neg %r0 {weft.task = #weft.task<U>} : tensor<8xf32>
  %s1 = weft.neg %r1 {weft.task = #weft.task<U>} : tensor<8xf32>
  %s2 = weft.neg %r2 {weft.task = #weft.task<U>} : tensor<8xf32>
  return %s0, %s1, %s2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// One op reads every shard, so the waits sink to right after the third
// reduce-scatter. Moving the first of them up must not bring the pass back
// to that reduce-scatter: only the oldest wait moves above the third
// bucket, and each wait stays below its own (a walk of the live block moved
// all three above the third bucket, the last above its own
// reduce-scatter: invalid IR).
// CHECK-LABEL: func.func @waits_right_after_the_third
// CHECK: %[[B0:.*]] = weft.concat %arg0, %arg1
// CHECK-NEXT: %[[R0:.*]] = shard.reduce_scatter %[[B0]]
// CHECK: %[[B1:.*]] = weft.concat %[[G2:.*]], %[[G3:.*]] {
// CHECK-NEXT: %[[R1:.*]] = shard.reduce_scatter %[[B1]]
// CHECK: weft.wait_collective %[[R0]], %[[B0]]
// CHECK-NEXT: %[[B2:.*]] = weft.concat
// CHECK-NEXT: %[[R2:.*]] = shard.reduce_scatter %[[B2]]
// CHECK-NEXT: weft.wait_collective %[[R1]], %[[B1]]
// CHECK-NEXT: weft.wait_collective %[[R2]], %[[B2]]
// CHECK-NEXT: weft.concat
func.func @waits_right_after_the_third(%g0: tensor<4xf32>, %g1: tensor<4xf32>,
                                       %x: tensor<4xf32>) -> tensor<12xf32> {
  %b0 = weft.concat %g0, %g1 {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r0 = shard.reduce_scatter %b0 on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<4xf32>
  %g2 = weft.neg %x {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %g3 = weft.exp %x {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %b1 = weft.concat %g2, %g3 {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r1 = shard.reduce_scatter %b1 on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 1 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<4xf32>
  %g4 = weft.neg %g3 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %g5 = weft.exp %g3 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %b2 = weft.concat %g4, %g5 {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %r2 = shard.reduce_scatter %b2 on @mesh grid_axes = [1] scatter_axis = 0 {weft.bucket = 2 : i64, weft.task = #weft.task<B, micro_batch = 0>} : tensor<8xf32> -> tensor<4xf32>
  %s = weft.concat %r0, %r1, %r2 {axis = 0 : i64, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<12xf32>
  return %s : tensor<12xf32>
}
