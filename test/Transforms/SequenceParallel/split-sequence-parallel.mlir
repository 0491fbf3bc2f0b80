// Megatron's sequence parallelism (Korthikanti et al. 2022, Figure 5) on a
// pre-LN MLP layer: the embedding's g becomes a reduce-scatter along the
// sequence (dimension 1 of [b, s, h]), the position embedding is sliced,
// LayerNorm, bias, dropout and residual run on s/T, f reads an all-gather,
// the row-parallel product is reduce-scattered, and the loss (which needs
// the whole sequence) reads an all-gather.
// RUN: weft-opt %s --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel --weft-split-sequence-parallel | FileCheck %s
// The backward: g's adjoint an all-gather, f's all-reduce fused with the
// all-gather's slice into a reduce-scatter, the sliced position embedding's
// gradient all-gathered, the gradients of the LayerNorm's weights and the
// bias all-reduced; the linear's input gathered again for its weight
// gradient (weft-regather-sequence-parallel).
// RUN: weft-opt %s --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel --weft-split-sequence-parallel --weft-autodiff --weft-regather-sequence-parallel | FileCheck %s --check-prefix=BWD

// CHECK-LABEL: func.func @layer
// CHECK: %[[E:.*]] = weft.vocab_parallel_gather
// CHECK: %[[RS:.*]] = shard.reduce_scatter %[[E]] on @mesh grid_axes = [2] scatter_axis = 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// CHECK: %[[POS:.*]] = shard.all_slice %arg2 on @mesh grid_axes = [2] slice_axis = 0 : tensor<4x8xf32> -> tensor<2x8xf32>
// CHECK: %[[X:.*]] = weft.add %[[RS]], %[[POS]] : (tensor<2x2x8xf32>, tensor<2x8xf32>) -> tensor<2x2x8xf32>
// CHECK: %[[G:.*]] = weft.copy_to_tensor_parallel %arg3
// CHECK: %[[B:.*]] = weft.copy_to_tensor_parallel %arg4
// CHECK: %[[N:.*]], %{{.*}}, %{{.*}} = weft.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64} : (tensor<2x2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x2x8xf32>, tensor<2x2x1xf32>, tensor<2x2x1xf32>)
// CHECK: %[[AG:.*]] = shard.all_gather %[[N]] on @mesh grid_axes = [2] gather_axis = 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// CHECK: %[[F:.*]] = weft.copy_to_tensor_parallel %[[AG]]
// CHECK: weft.matmul %[[F]], %arg5 : (tensor<2x4x8xf32>, tensor<8x8xf32>)
// CHECK: %[[P:.*]] = weft.matmul
// CHECK: %[[RS2:.*]] = shard.reduce_scatter %[[P]] on @mesh grid_axes = [2] scatter_axis = 1 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// CHECK: %[[BIAS:.*]] = weft.copy_to_tensor_parallel %arg7
// CHECK: %[[Y:.*]] = weft.add %[[RS2]], %[[BIAS]] : (tensor<2x2x8xf32>, tensor<8xf32>) -> tensor<2x2x8xf32>
// CHECK: weft.dropout %[[Y]] {{{.*}}weft.shard = {blocks = 1 : i64, dim = 1 : i64}} : (tensor<2x2x8xf32>)
// CHECK: %[[Z:.*]] = weft.add %[[X]], %{{.*}} : (tensor<2x2x8xf32>, tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
// CHECK: %[[WHOLE:.*]] = shard.all_gather %[[Z]] on @mesh grid_axes = [2] gather_axis = 1 : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// CHECK: weft.reduce_sum %[[WHOLE]]
// CHECK-NOT: shard.all_reduce

// BWD-LABEL: func.func @layer
// The loss's gather: a complete gradient, sliced.
// BWD: shard.all_slice %{{.*}} slice_axis = 1 {weft.task = #weft.task<B>} : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// BWD: shard.all_reduce %{{.*}} {weft.task = #weft.task<B>} : tensor<8xf32>
// BWD: shard.all_gather %{{.*}} gather_axis = 1 {weft.task = #weft.task<B>} : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// BWD: %[[AGAIN:.*]] = shard.all_gather %output on @mesh grid_axes = [2] gather_axis = 1 {weft.task = #weft.task<R>}
// BWD: weft.copy_to_tensor_parallel %[[AGAIN]] {{{.*}}weft.task = #weft.task<R{{[^>]*}}>}
// BWD-NOT: shard.all_reduce %{{.*}} : tensor<2x4x8xf32>
// BWD: shard.reduce_scatter %{{.*}} scatter_axis = 1 {weft.task = #weft.task<B>} : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// BWD-COUNT-2: shard.all_reduce %{{.*}} {weft.task = #weft.task<B>} : tensor<8xf32>
// BWD: shard.all_gather %{{.*}} gather_axis = 0 {weft.task = #weft.task<B>} : tensor<2x8xf32> -> tensor<4x8xf32>
// BWD: shard.all_gather %{{.*}} gather_axis = 1 {weft.task = #weft.task<B>} : tensor<2x2x8xf32> -> tensor<2x4x8xf32>
// BWD-NOT: shard.
// BWD: return
func.func @layer(%tokens: tensor<2x4xi64> {weft.input = "tokens"},
                 %wte: tensor<16x8xf32> {weft.param = "wte"},
                 %wpe: tensor<4x8xf32> {weft.param = "wpe"},
                 %g: tensor<8xf32> {weft.param = "ln.weight"},
                 %b: tensor<8xf32> {weft.param = "ln.bias"},
                 %w1: tensor<8x16xf32> {weft.param = "fc.weight"},
                 %w2: tensor<16x8xf32> {weft.param = "out.weight"},
                 %b2: tensor<8xf32> {weft.param = "out.bias"}) -> tensor<f32> {
  %e = weft.gather %wte, %tokens {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32> loc("embed")
  %x = weft.add %e, %wpe : (tensor<2x4x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32> loc("positions")
  %n, %m, %r = weft.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) loc("ln")
  %h = weft.matmul %n, %w1 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32> loc("fc")
  %a = weft.relu %h : tensor<2x4x16xf32>
  %y = weft.matmul %a, %w2 : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32> loc("out")
  %yb = weft.add %y, %b2 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("out.bias")
  %d, %mask = weft.dropout %yb {ratio = 1.000000e-01 : f64, training = true} : (tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xi1>) loc("drop")
  %z = weft.add %x, %d : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("residual")
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32> loc("loss")
  return %l : tensor<f32>
}
