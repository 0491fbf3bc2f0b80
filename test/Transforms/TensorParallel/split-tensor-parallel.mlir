// weft-split-tensor-parallel on a Megatron MLP and a fused-QKV attention
// block, T = 2 (the mesh's tensor axis); then weft-autodiff derives the
// backward's collectives from f and g.
// RUN: weft-opt %s --split-input-file --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel --weft-autodiff | FileCheck %s --check-prefix=GRAD
// RUN: weft-opt %s --split-input-file --weft-split-tensor-parallel | FileCheck %s --check-prefix=ONE

// The MLP: fc column-parallel (weight rows = output features halved, bias
// halved), GELU local, out row-parallel (input features halved); f before
// fc, the all-reduce (g) after out and before its bias.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<8x8xf32> {weft.param = "fc.weight", weft.shard = {blocks = 1 : i64, dim = 0 : i64}}
// CHECK-SAME: tensor<8xf32> {weft.param = "fc.bias", weft.shard = {blocks = 1 : i64, dim = 0 : i64}}
// CHECK-SAME: tensor<8x8xf32> {weft.param = "out.weight", weft.shard = {blocks = 1 : i64, dim = 1 : i64}}
// CHECK-SAME: tensor<8xf32> {weft.param = "out.bias"}
// CHECK: %[[X:.*]] = weft.mul
// CHECK: %[[F:.*]] = weft.copy_to_tensor_parallel %[[X]] {grid = @mesh, grid_axes = array<i16: 2>} : tensor<4x8xf32>
// CHECK: weft.matmul %[[F]], %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: weft.gelu %{{.*}} : tensor<4x8xf32>
// CHECK: %[[P:.*]] = weft.matmul {{.*}} -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]] on @mesh grid_axes = [2] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: weft.add %arg5, %[[S]]
// The backward: g's adjoint is the identity, f's an all-reduce of the
// input's partial gradient.
// GRAD-LABEL: func.func @mlp
// GRAD: shard.all_reduce %{{.*}} on @mesh grid_axes = [2] :
// GRAD: shard.all_reduce %{{.*}} on @mesh grid_axes = [2] {weft.task = #weft.task<B>}
// GRAD-NOT: shard.all_reduce
// GRAD: return
// Without a tensor axis the pass changes nothing.
// ONE-LABEL: func.func @mlp
// ONE-NOT: weft.shard
// ONE-NOT: copy_to_tensor_parallel
func.func @mlp(%x0: tensor<4x8xf32> {weft.input = "x"},
               %scale: tensor<8xf32> {weft.param = "scale"},
               %w1: tensor<16x8xf32> {weft.param = "fc.weight"},
               %b1: tensor<16xf32> {weft.param = "fc.bias"},
               %w2: tensor<8x16xf32> {weft.param = "out.weight"},
               %b2: tensor<8xf32> {weft.param = "out.bias"}) -> tensor<f32> {
  %x = weft.mul %x0, %scale : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %w1t = weft.transpose %w1 {perm = array<i64: 1, 0>} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %h = weft.matmul %x, %w1t : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %hb = weft.add %b1, %h : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %a = weft.gelu %hb : tensor<4x16xf32>
  %w2t = weft.transpose %w2 {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = weft.matmul %a, %w2t : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %yb = weft.add %b2, %y : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %yb {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// GPT-NeoX's layout: the fused projection head-interleaved, [heads, (q, k,
// v), head dim], so a rank's heads are one contiguous column block (blocks
// = 1), sliced into q, k, v inside each head; its baddbmm adds a splat of
// zeros to the scores, which becomes the same splat in the local shape.
// CHECK-LABEL: func.func @neox_attention
// CHECK-SAME: tensor<8x12xf32> {weft.param = "qkv.weight", weft.shard = {blocks = 1 : i64, dim = 1 : i64}}
// CHECK: weft.reshape %{{.*}} {shape = array<i64: 1, 3, 2, 6>} : (tensor<1x3x12xf32>) -> tensor<1x3x2x6xf32>
// CHECK: %[[Z:.*]] = weft.constant dense<0.000000e+00> : tensor<1x2x3x3xf32>
// CHECK: weft.add %{{.*}}, %[[Z]] : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK: weft.softmax %{{.*}} {axis = 3 : i64} : tensor<1x2x3x3xf32>
// CHECK: shard.all_reduce
func.func @neox_attention(%x: tensor<1x3x8xf32> {weft.input = "x"},
                          %wqkv: tensor<8x24xf32> {weft.param = "qkv.weight"},
                          %wo: tensor<8x8xf32> {weft.param = "proj.weight"}) -> tensor<f32> {
  %qkv = weft.matmul %x, %wqkv : (tensor<1x3x8xf32>, tensor<8x24xf32>) -> tensor<1x3x24xf32>
  %h = weft.reshape %qkv {shape = array<i64: 1, 3, 4, 6>} : (tensor<1x3x24xf32>) -> tensor<1x3x4x6xf32>
  %q4 = weft.slice %h {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 1, 3, 4, 2>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x4x2xf32>
  %k4 = weft.slice %h {starts = array<i64: 0, 0, 0, 2>, ends = array<i64: 1, 3, 4, 4>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x4x2xf32>
  %v4 = weft.slice %h {starts = array<i64: 0, 0, 0, 4>, ends = array<i64: 1, 3, 4, 6>, steps = array<i64: 1, 1, 1, 1>} : (tensor<1x3x4x6xf32>) -> tensor<1x3x4x2xf32>
  %qh = weft.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x3x2xf32>
  %kh = weft.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x2x3xf32>
  %vh = weft.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x3x2xf32>
  %s = weft.matmul %qh, %kh : (tensor<1x4x3x2xf32>, tensor<1x4x2x3xf32>) -> tensor<1x4x3x3xf32>
  %zero = weft.constant dense<0.000000e+00> : tensor<1x4x3x3xf32>
  %sz = weft.add %s, %zero : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = weft.softmax %sz {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %o = weft.matmul %p, %vh : (tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  %ot = weft.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x3x2xf32>) -> tensor<1x3x4x2xf32>
  %y = weft.reshape %ot {shape = array<i64: 1, 3, 8>} : (tensor<1x3x4x2xf32>) -> tensor<1x3x8xf32>
  %out = weft.matmul %y, %wo : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %l = weft.reduce_sum %out {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<1x3x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// Attention with a fused QKV projection [h, 3h]: each of Q, K and V is split
// (blocks = 3), so the split into three stays local; the heads (4) are
// halved by the reshapes, core attention runs on 2 heads per rank.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: tensor<8x12xf32> {weft.param = "qkv.weight", weft.shard = {blocks = 3 : i64, dim = 1 : i64}}
// CHECK-SAME: tensor<4x8xf32> {weft.param = "proj.weight", weft.shard = {blocks = 1 : i64, dim = 0 : i64}}
// CHECK: weft.split %{{.*}} {axis = 2 : i64, sizes = array<i64: 4, 4, 4>} : (tensor<1x3x12xf32>) -> (tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>)
// CHECK: weft.reshape %{{.*}} {shape = array<i64: 1, 3, 2, 2>} : (tensor<1x3x4xf32>) -> tensor<1x3x2x2xf32>
// CHECK: weft.softmax %{{.*}} {axis = 3 : i64} : tensor<1x2x3x3xf32>
// CHECK: weft.reshape %{{.*}} {shape = array<i64: 1, 3, 4>} : (tensor<1x3x2x2xf32>) -> tensor<1x3x4xf32>
// CHECK: weft.matmul %{{.*}} : (tensor<1x3x4xf32>, tensor<4x8xf32>) -> tensor<1x3x8xf32>
// CHECK: shard.all_reduce
func.func @attention(%x: tensor<1x3x8xf32> {weft.input = "x"},
                     %wqkv: tensor<8x24xf32> {weft.param = "qkv.weight"},
                     %wo: tensor<8x8xf32> {weft.param = "proj.weight"}) -> tensor<f32> {
  %qkv = weft.matmul %x, %wqkv : (tensor<1x3x8xf32>, tensor<8x24xf32>) -> tensor<1x3x24xf32>
  %q, %k, %v = weft.split %qkv {axis = 2 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<1x3x24xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>)
  %q4 = weft.reshape %q {shape = array<i64: 1, 3, 4, 2>} : (tensor<1x3x8xf32>) -> tensor<1x3x4x2xf32>
  %k4 = weft.reshape %k {shape = array<i64: 1, 3, 4, 2>} : (tensor<1x3x8xf32>) -> tensor<1x3x4x2xf32>
  %v4 = weft.reshape %v {shape = array<i64: 1, 3, 4, 2>} : (tensor<1x3x8xf32>) -> tensor<1x3x4x2xf32>
  %qh = weft.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x3x2xf32>
  %kh = weft.transpose %k4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x2x3xf32>
  %vh = weft.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x3x2xf32>
  %s = weft.matmul %qh, %kh : (tensor<1x4x3x2xf32>, tensor<1x4x2x3xf32>) -> tensor<1x4x3x3xf32>
  %p = weft.softmax %s {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %o = weft.matmul %p, %vh : (tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  %ot = weft.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x3x2xf32>) -> tensor<1x3x4x2xf32>
  %y = weft.reshape %ot {shape = array<i64: 1, 3, 8>} : (tensor<1x3x4x2xf32>) -> tensor<1x3x8xf32>
  %out = weft.matmul %y, %wo : (tensor<1x3x8xf32>, tensor<8x8xf32>) -> tensor<1x3x8xf32>
  %l = weft.reduce_sum %out {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<1x3x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// A linear that reaches no other linear (an LM head) is no block: it stays
// replicated, and the MLP before it is split.
// CHECK-LABEL: func.func @head
// CHECK-SAME: tensor<8x8xf32> {weft.param = "fc.weight", weft.shard
// CHECK-SAME: tensor<8x8xf32> {weft.param = "out.weight", weft.shard
// CHECK-SAME: %{{.*}}: tensor<8x10xf32> {weft.param = "head.weight"})
func.func @head(%x: tensor<4x8xf32> {weft.input = "x"},
                %w1: tensor<8x16xf32> {weft.param = "fc.weight"},
                %w2: tensor<16x8xf32> {weft.param = "out.weight"},
                %wh: tensor<8x10xf32> {weft.param = "head.weight"}) -> tensor<f32> {
  %h = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = weft.relu %h : tensor<4x16xf32>
  %y = weft.matmul %a, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %logits = weft.matmul %y, %wh : (tensor<4x8xf32>, tensor<8x10xf32>) -> tensor<4x10xf32>
  %l = weft.reduce_sum %logits {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x10xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// nn.MultiheadAttention's export: the packed projection [s, b, 3h] is cut by
// three slices of width h (blocks = 3: each slice is local, [i h/2, (i+1)
// h/2) on each rank), heads are folded into the batch ([s, b*heads, dh]:
// the shard becomes batch-blocked), and the output projection is a Gemm
// whose bias moves after the all-reduce.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: tensor<12xf32> {weft.param = "in_proj_bias", weft.shard = {blocks = 3 : i64, dim = 0 : i64}}
// CHECK-SAME: tensor<8x4xf32> {weft.param = "out_proj.weight", weft.shard = {blocks = 1 : i64, dim = 1 : i64}}
// CHECK: weft.slice %{{.*}} {ends = array<i64: 3, 1, 8>, starts = array<i64: 0, 0, 4>, steps = array<i64: 1, 1, 1>} : (tensor<3x1x12xf32>) -> tensor<3x1x4xf32>
// CHECK: weft.reshape %{{.*}} {shape = array<i64: 3, 2, 2>} : (tensor<3x1x4xf32>) -> tensor<3x2x2xf32>
// CHECK: %[[P:.*]] = weft.gemm %{{.*}}, %{{.*}} {transB = true} : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]]
// CHECK: weft.add %[[S]], %arg4 : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
func.func @packed(%x: tensor<3x1x8xf32> {weft.input = "x"},
                  %w: tensor<24x8xf32> {weft.param = "in_proj_weight"},
                  %b: tensor<24xf32> {weft.param = "in_proj_bias"},
                  %wo: tensor<8x8xf32> {weft.param = "out_proj.weight"},
                  %bo: tensor<8xf32> {weft.param = "out_proj.bias"}) -> tensor<f32> {
  %wt = weft.transpose %w {perm = array<i64: 1, 0>} : (tensor<24x8xf32>) -> tensor<8x24xf32>
  %p = weft.matmul %x, %wt : (tensor<3x1x8xf32>, tensor<8x24xf32>) -> tensor<3x1x24xf32>
  %pb = weft.add %b, %p : (tensor<24xf32>, tensor<3x1x24xf32>) -> tensor<3x1x24xf32>
  %q = weft.slice %pb {ends = array<i64: 3, 1, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 1>} : (tensor<3x1x24xf32>) -> tensor<3x1x8xf32>
  %k = weft.slice %pb {ends = array<i64: 3, 1, 16>, starts = array<i64: 0, 0, 8>, steps = array<i64: 1, 1, 1>} : (tensor<3x1x24xf32>) -> tensor<3x1x8xf32>
  %v = weft.slice %pb {ends = array<i64: 3, 1, 24>, starts = array<i64: 0, 0, 16>, steps = array<i64: 1, 1, 1>} : (tensor<3x1x24xf32>) -> tensor<3x1x8xf32>
  %q3 = weft.reshape %q {shape = array<i64: 3, 4, 2>} : (tensor<3x1x8xf32>) -> tensor<3x4x2xf32>
  %k3 = weft.reshape %k {shape = array<i64: 3, 4, 2>} : (tensor<3x1x8xf32>) -> tensor<3x4x2xf32>
  %v3 = weft.reshape %v {shape = array<i64: 3, 4, 2>} : (tensor<3x1x8xf32>) -> tensor<3x4x2xf32>
  %qh = weft.transpose %q3 {perm = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  %kh = weft.transpose %k3 {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  %vh = weft.transpose %v3 {perm = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  %s = weft.matmul %qh, %kh : (tensor<4x3x2xf32>, tensor<4x2x3xf32>) -> tensor<4x3x3xf32>
  %a = weft.softmax %s {axis = 2 : i64} : tensor<4x3x3xf32>
  %o = weft.matmul %a, %vh : (tensor<4x3x3xf32>, tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
  %ot = weft.transpose %o {perm = array<i64: 1, 0, 2>} : (tensor<4x3x2xf32>) -> tensor<3x4x2xf32>
  %flat = weft.reshape %ot {shape = array<i64: 3, 8>} : (tensor<3x4x2xf32>) -> tensor<3x8xf32>
  %y = weft.gemm %flat, %wo, %bo {transB = true} : (tensor<3x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// A dropout in a block draws its shard of the whole tensor's mask: it is
// marked with the shard (plan emission adds the rank's index).
// CHECK-LABEL: func.func @dropout
// CHECK: weft.dropout %{{.*}} {ratio = 1.000000e-01 : f64, training = true, weft.shard = {blocks = 1 : i64, dim = 1 : i64}} : (tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
func.func @dropout(%x: tensor<4x8xf32> {weft.input = "x"},
                   %w1: tensor<8x16xf32> {weft.param = "fc.weight"},
                   %w2: tensor<16x8xf32> {weft.param = "out.weight"}) -> tensor<f32> {
  %h = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %d, %mask = weft.dropout %h {ratio = 0.1 : f64, training = true} : (tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xi1>)
  %y = weft.matmul %d, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// Vocab parallelism: the tied embedding/head [V = 8, h = 4] sharded by rows;
// the lookup masks the ids other ranks hold and g sums; the head is a
// column-parallel product (f before it); the loss all-reduces the row
// maxima, then the denominators and target scores, never the logits.
// CHECK-LABEL: func.func @vocab
// CHECK-SAME: tensor<4x4xf32> {weft.param = "wte", weft.shard = {blocks = 1 : i64, dim = 0 : i64}}
// CHECK: %[[E:.*]] = weft.vocab_parallel_gather %arg2, %arg0 {grid = @mesh, grid_axes = array<i16: 2>} : (tensor<4x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
// CHECK: shard.all_reduce %[[E]] on @mesh grid_axes = [2] : tensor<2x3x4xf32>
// CHECK: weft.copy_to_tensor_parallel
// CHECK: weft.matmul {{.*}} -> tensor<2x3x4xf32>
// CHECK: %[[M:.*]] = weft.reduce_max %{{.*}} {axes = array<i64: 1>, keepdims = true} : (tensor<6x4xf32>) -> tensor<6x1xf32>
// CHECK: %[[MAX:.*]] = shard.all_reduce %[[M]] on @mesh grid_axes = [2] reduction = max
// CHECK: %[[ST:.*]] = weft.vocab_parallel_cross_entropy_stats %{{.*}}, %[[MAX]], %{{.*}} {grid = @mesh, grid_axes = array<i16: 2>} : (tensor<6x4xf32>, tensor<6x1xf32>, tensor<6xi64>) -> tensor<6x2xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[ST]] on @mesh grid_axes = [2] :
// CHECK: weft.vocab_parallel_cross_entropy %{{.*}}, %[[MAX]], %[[S]], %{{.*}} {grid = @mesh, grid_axes = array<i16: 2>} : (tensor<6x4xf32>, tensor<6x1xf32>, tensor<6x2xf32>, tensor<6xi64>) -> (tensor<f32>, tensor<6x4xf32>)
// CHECK-NOT: softmax_cross_entropy
// GRAD-LABEL: func.func @vocab
// GRAD: weft.vocab_parallel_cross_entropy_grad
// GRAD: weft.vocab_parallel_gather_grad
func.func @vocab(%tokens: tensor<2x3xi64> {weft.input = "tokens"},
                 %targets: tensor<2x3xi64> {weft.input = "targets"},
                 %wte: tensor<8x4xf32> {weft.param = "wte"}) -> tensor<f32> {
  %x = weft.gather %wte, %tokens {axis = 0 : i64} : (tensor<8x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %h = weft.tanh %x : tensor<2x3x4xf32>
  %wt = weft.transpose %wte {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %logits = weft.matmul %h, %wt : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<2x3x8xf32>
  %scores = weft.reshape %logits {shape = array<i64: 6, 8>} : (tensor<2x3x8xf32>) -> tensor<6x8xf32>
  %labels = weft.reshape %targets {shape = array<i64: 6>} : (tensor<2x3xi64>) -> tensor<6xi64>
  %loss, %logp = weft.softmax_cross_entropy %scores, %labels : (tensor<6x8xf32>, tensor<6xi64>) -> (tensor<f32>, tensor<6x8xf32>)
  return %loss : tensor<f32>
}

// -----
// A row-parallel Gemm with beta != 1: beta C is added once, after g.
// CHECK-LABEL: func.func @gemm_beta
// CHECK: %[[B:.*]] = weft.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[C:.*]] = weft.mul %arg3, %[[B]]
// CHECK: %[[P:.*]] = weft.gemm %{{.*}}, %arg2 {beta = 5.000000e-01 : f64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = shard.all_reduce %[[P]]
// CHECK: weft.add %[[S]], %[[C]]
func.func @gemm_beta(%x: tensor<4x8xf32> {weft.input = "x"},
                     %w1: tensor<8x16xf32> {weft.param = "fc.weight"},
                     %w2: tensor<16x8xf32> {weft.param = "out.weight"},
                     %c: tensor<8xf32> {weft.param = "out.bias"}) -> tensor<f32> {
  %h = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = weft.relu %h : tensor<4x16xf32>
  %y = weft.gemm %a, %w2, %c {beta = 0.5 : f64} : (tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
