// Blocks the split cannot keep local: an error naming the op and the
// block, or with fallback=replicate a warning and a replicated block.
// RUN: not weft-opt %s --split-input-file --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel -o /dev/null 2>&1 | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel="fallback=replicate" 2>&1 | FileCheck %s --check-prefix=REPL
// RUN: not weft-opt %s --split-input-file --weft-create-device-mesh="tensor=4" --weft-split-tensor-parallel 2>&1 | FileCheck %s --check-prefix=FOUR
// RUN: not weft-opt %s --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel="fallback=sometimes" 2>&1 | FileCheck %s --check-prefix=FLAG

// FLAG: fallback='sometimes': expected error or replicate

// A LayerNorm over the sharded features inside the block.
// REPL: warning: {{.*}}tensor parallelism: replicating the block of 'ln': it normalizes over the sharded dimension
// REPL-LABEL: func.func @norm_inside
// REPL-NOT: weft.shard
// REPL-NOT: copy_to_tensor_parallel
// FOUR: error: {{.*}}tensor parallelism: cannot split 'ln' (weft.layer_norm) in the block that starts at 'fc' (weft.matmul): it normalizes over the sharded dimension
func.func @norm_inside(%x: tensor<4x8xf32> {weft.input = "x"},
                       %w1: tensor<8x16xf32> {weft.param = "fc.weight"},
                       %g: tensor<16xf32> {weft.param = "ln.weight"},
                       %b: tensor<16xf32> {weft.param = "ln.bias"},
                       %w2: tensor<16x8xf32> {weft.param = "out.weight"}) -> tensor<f32> {
  %h = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc")
  // CHECK: error: {{.*}}tensor parallelism: cannot split 'ln' (weft.layer_norm) in the block that starts at 'fc' (weft.matmul): it normalizes over the sharded dimension (--tensor-parallel-fallback=replicate leaves the block replicated)
  %n, %m, %r = weft.layer_norm %h, %g, %b {axis = 1 : i64} : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x1xf32>, tensor<4x1xf32>) loc("ln")
  %y = weft.matmul %n, %w2 : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// Features the tensor axis does not divide.
func.func @indivisible(%x: tensor<4x8xf32> {weft.input = "x"},
                       %w1: tensor<8x5xf32> {weft.param = "fc.weight"},
                       %w2: tensor<5x8xf32> {weft.param = "out.weight"}) -> tensor<f32> {
  // CHECK: error: {{.*}}tensor parallelism: cannot split 'fc' (weft.matmul): its 5 output features do not split 2 ways
  %h = weft.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32> loc("fc")
  %y = weft.matmul %h, %w2 : (tensor<4x5xf32>, tensor<5x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// Nothing to split at all.
// CHECK: error: {{.*}}tensor parallelism: no MLP or attention block to split 2 ways
func.func @no_block(%x: tensor<4x8xf32> {weft.input = "x"},
                    %w: tensor<8x8xf32> {weft.param = "w"}) -> tensor<f32> {
  %y = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
