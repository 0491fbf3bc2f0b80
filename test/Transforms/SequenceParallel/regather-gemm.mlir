// weft-regather-sequence-parallel on Linear layers in gemm form
// (weft-fold-weight-transpose after the splits): the column-parallel
// layer's input reaches its gemm through a reshape folding [b, s] into
// rows, and the weight gradient reads that reshape. The backward gathers
// the input again and reshapes the regathered tensor (both recompute, R),
// so the forward's gathered [b, s, h] dies at its gemm.
// RUN: weft-opt %s --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel --weft-split-sequence-parallel --weft-fold-weight-transpose --weft-autodiff --weft-regather-sequence-parallel | FileCheck %s

// CHECK-LABEL: func.func @layer
// CHECK: %[[AG:.*]] = shard.all_gather %[[N:.*]] on @mesh grid_axes = [2] gather_axis = 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[F:.*]] = weft.copy_to_tensor_parallel %[[AG]]
// CHECK: %[[ROWS:.*]] = weft.reshape %[[F]] {shape = array<i64: 8, 8>} : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
// CHECK: weft.gemm %[[ROWS]], %arg4 {beta = 0.000000e+00 : f64, transB = true}
// CHECK: %[[AGAIN:.*]] = shard.all_gather %[[N]] on @mesh grid_axes = [2] gather_axis = 1 {weft.task = #weft.task<R>}
// CHECK-NEXT: %[[F2:.*]] = weft.copy_to_tensor_parallel %[[AGAIN]] {{{.*}}weft.task = #weft.task<R>}
// CHECK-NEXT: %[[ROWS2:.*]] = weft.reshape %[[F2]] {shape = array<i64: 8, 8>, weft.task = #weft.task<R>}
// CHECK-NEXT: weft.gemm %{{.*}}, %[[ROWS2]] {beta = 0.000000e+00 : f64, transA = true, weft.task = #weft.task<B>}
// CHECK: return

func.func @layer(%tokens: tensor<2x4xi64> {weft.input = "tokens"},
                 %wte: tensor<16x8xf32> {weft.param = "wte"},
                 %g: tensor<8xf32> {weft.param = "ln.weight"},
                 %b: tensor<8xf32> {weft.param = "ln.bias"},
                 %w1: tensor<16x8xf32> {weft.param = "fc.weight"},
                 %w2: tensor<8x16xf32> {weft.param = "out.weight"}) -> tensor<f32> {
  %x = weft.gather %wte, %tokens {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("embed")
  %n, %m, %r = weft.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) loc("ln")
  %w1t = weft.transpose %w1 {perm = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %h = weft.matmul %n, %w1t : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("fc")
  %a = weft.relu %h : tensor<2x4x16xf32>
  %w2t = weft.transpose %w2 {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = weft.matmul %a, %w2t : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("out")
  %z = weft.add %x, %y : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("residual")
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
