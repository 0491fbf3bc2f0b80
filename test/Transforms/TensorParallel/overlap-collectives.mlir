// weft-overlap-collectives: each collective becomes a post and a
// weft.wait_collective; the post moves up to its operand, the wait down to
// the first reader of the result.
// RUN: weft-opt %s --split-input-file --weft-overlap-collectives | FileCheck %s

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// A column-parallel linear's backward, the weight gradient first: the input
// gradient's GEMM and its all-reduce (f's adjoint) move before the weight
// gradient's GEMM, which then runs while the all-reduce is in flight.
// CHECK-LABEL: func.func @linear_backward
// CHECK: %[[DX:.*]] = weft.matmul %arg0, %arg2
// CHECK: %[[P:.*]] = shard.all_reduce %[[DX]] on @mesh grid_axes = [2]
// CHECK: %[[DW:.*]] = weft.matmul %arg1, %arg0
// CHECK: %[[S:.*]] = weft.wait_collective %[[P]], %[[DX]] {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: weft.add %[[S]], %arg3
// CHECK: return %[[DW]]
func.func @linear_backward(%dy: tensor<4x8xf32>, %xt: tensor<8x4xf32>,
                           %w: tensor<8x8xf32>, %r: tensor<4x8xf32>)
    -> (tensor<8x8xf32>, tensor<4x8xf32>) {
  %dw = weft.matmul %xt, %dy {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<8x4xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %dx = weft.matmul %dy, %w {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = shard.all_reduce %dx on @mesh grid_axes = [2] {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4x8xf32> -> tensor<4x8xf32>
  %y = weft.add %s, %r {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %dw, %y : tensor<8x8xf32>, tensor<4x8xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// The same in gemm form (weft-fold-weight-transpose): the input gradient
// reaches its all-reduce through a reshape that unfolds its rows. The gemm
// moves before the weight gradient's, its reshape after it, then the post.
// CHECK-LABEL: func.func @gemm_backward
// CHECK: %[[DX:.*]] = weft.gemm %arg0, %arg2
// CHECK-NEXT: %[[DX3:.*]] = weft.reshape %[[DX]]
// CHECK-NEXT: %[[P:.*]] = shard.all_reduce %[[DX3]] on @mesh grid_axes = [2]
// CHECK-NEXT: %[[DW:.*]] = weft.gemm %arg0, %arg1
// CHECK-NEXT: %[[S:.*]] = weft.wait_collective %[[P]], %[[DX3]]
// CHECK-NEXT: weft.add %[[S]], %arg3
// CHECK: return %[[DW]]
func.func @gemm_backward(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>,
                         %w: tensor<8x8xf32>, %r: tensor<2x2x8xf32>)
    -> (tensor<8x8xf32>, tensor<2x2x8xf32>) {
  %dw = weft.gemm %dy, %x {transA = true, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %dx = weft.gemm %dy, %w {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %dx3 = weft.reshape %dx {shape = array<i64: 2, 2, 8>, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x8xf32>) -> tensor<2x2x8xf32>
  %s = shard.all_reduce %dx3 on @mesh grid_axes = [2] {weft.task = #weft.task<B, micro_batch = 0>} : tensor<2x2x8xf32> -> tensor<2x2x8xf32>
  %y = weft.add %s, %r {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  return %dw, %y : tensor<8x8xf32>, tensor<2x2x8xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// A later micro-batch's weight gradient accumulates into the running sums
// in place (weft-fold-grad-accumulation): it writes only the sums, so the
// input gradient's GEMM and its post still move above it, and it is the
// one op the post passes. The all-reduce of the sum itself stays below it.
// CHECK-LABEL: func.func @accumulating_backward
// CHECK: %[[DX:.*]] = weft.gemm %arg0, %arg4
// CHECK-NEXT: %[[P:.*]] = shard.all_reduce %[[DX]]
// CHECK-NEXT: %[[W:.*]], %[[B:.*]] = weft.wgrad_bias %arg0, %arg1 accumulate %arg2, %arg3
// CHECK-NEXT: %[[SUM:.*]] = shard.all_reduce %[[W]]
// CHECK-NEXT: weft.wait_collective %[[P]], %[[DX]]
func.func @accumulating_backward(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>,
                                 %wsum: tensor<4x3xf32>, %bsum: tensor<4xf32>,
                                 %w: tensor<4x3xf32>)
    -> (tensor<4x3xf32>, tensor<4xf32>, tensor<6x3xf32>) {
  %dw, %db = weft.wgrad_bias %dy, %x accumulate %wsum, %bsum {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<6x4xf32>, tensor<6x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %dx = weft.gemm %dy, %w {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<6x4xf32>, tensor<4x3xf32>) -> tensor<6x3xf32>
  %s = shard.all_reduce %dx on @mesh grid_axes = [2] {weft.task = #weft.task<B, micro_batch = 1>} : tensor<6x3xf32> -> tensor<6x3xf32>
  %t = shard.all_reduce %dw on @mesh grid_axes = [2] {weft.task = #weft.task<B, micro_batch = 1>} : tensor<4x3xf32> -> tensor<4x3xf32>
  return %t, %db, %s : tensor<4x3xf32>, tensor<4xf32>, tensor<6x3xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// Moves stop at a task's end (the forward all-reduce read only by the
// backward is waited for at the end of the forward) and at an in-place
// update (the optimizer writes the parameter the last all-reduce sums); a
// post passes other posts and at most one other op (the first all-reduce
// moves before one negation; the second before the other negation, not
// past the first negation).
// CHECK-LABEL: func.func @boundaries
// CHECK: %[[A:.*]] = shard.all_reduce %arg0
// CHECK-NEXT: weft.neg %arg1
// CHECK-NEXT: %[[B:.*]] = shard.all_reduce %arg1
// CHECK-NEXT: weft.neg %arg0 {weft.task = #weft.task<F, micro_batch = 0>}
// CHECK: %[[WB:.*]] = weft.wait_collective %[[B]], %arg1
// CHECK: weft.mul %[[WB]]
// CHECK: %[[WA:.*]] = weft.wait_collective %[[A]], %arg0 {weft.task = #weft.task<F, micro_batch = 0>}
// CHECK: weft.neg %[[WA]] {weft.task = #weft.task<B, micro_batch = 0>}
// CHECK: %[[C:.*]] = shard.all_reduce %arg2
// CHECK: %[[WC:.*]] = weft.wait_collective %[[C]], %arg2
// CHECK: weft.sgd %arg2
// CHECK: weft.neg %[[WC]]
func.func @boundaries(%x: tensor<4xf32>, %y: tensor<4xf32>,
                      %p: tensor<4xf32> {weft.param = "p"},
                      %g: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>) {
  %k = weft.neg %y {weft.task = #weft.task<F, micro_batch = 0>} : tensor<4xf32>
  %a = shard.all_reduce %x on @mesh grid_axes = [2] {weft.task = #weft.task<F, micro_batch = 0>} : tensor<4xf32> -> tensor<4xf32>
  %n = weft.neg %x {weft.task = #weft.task<F, micro_batch = 0>} : tensor<4xf32>
  %b = shard.all_reduce %y on @mesh grid_axes = [2] {weft.task = #weft.task<F, micro_batch = 0>} : tensor<4xf32> -> tensor<4xf32>
  %m = weft.mul %b, %n {weft.task = #weft.task<F, micro_batch = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %d = weft.neg %a {weft.task = #weft.task<B, micro_batch = 0>} : tensor<4xf32>
  %c = shard.all_reduce %p on @mesh grid_axes = [2] {weft.task = #weft.task<U>} : tensor<4xf32> -> tensor<4xf32>
  %u = weft.sgd %p, %g {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weft.task = #weft.task<U>, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = weft.neg %c {weft.task = #weft.task<U>} : tensor<4xf32>
  return %m, %d, %u, %e, %k : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["pipeline", "data", "tensor"]}

// Sequence parallelism's regathered linear input: the wait moves past the
// input-gradient GEMM and carries the (free) reshape of the gathered tensor
// down with it, to the weight-gradient GEMM that reads it.
// CHECK-LABEL: func.func @regather
// CHECK: %[[G:.*]] = shard.all_gather %arg0
// CHECK-NEXT: %[[DX:.*]] = weft.matmul %arg1, %arg2
// CHECK-NEXT: %[[W:.*]] = weft.wait_collective %[[G]], %arg0
// CHECK-NEXT: %[[R:.*]] = weft.reshape %[[W]]
// CHECK-NEXT: weft.matmul %[[R]], %arg1
func.func @regather(%shard: tensor<2x4xf32>, %dy: tensor<4x4xf32>,
                    %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %g = shard.all_gather %shard on @mesh grid_axes = [2] gather_axis = 0 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<2x4xf32> -> tensor<4x4xf32>
  %r = weft.reshape %g {shape = array<i64: 4, 4>, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dx = weft.matmul %dy, %w {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %dw = weft.matmul %r, %dy {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %dx, %dw : tensor<4x4xf32>, tensor<4x4xf32>
}
