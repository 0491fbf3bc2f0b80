// Sequence parallelism's errors: each names the op (or says what is
// missing) and exits non-zero.
// RUN: not weft-opt %s --split-input-file --weft-create-device-mesh="tensor=2" --weft-split-tensor-parallel --weft-split-sequence-parallel -o /dev/null 2>&1 | FileCheck %s
// RUN: not weft-opt %s --split-input-file --weft-create-device-mesh="tensor=4" --weft-split-tensor-parallel --weft-split-sequence-parallel -o /dev/null 2>&1 | FileCheck %s --check-prefix=FOUR
// RUN: not weft-opt %s --split-input-file --weft-split-sequence-parallel -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOMESH

// NOMESH-COUNT-3: error: sequence parallelism needs a tensor axis of more than one rank (--tensor-parallel T)

// No gather by a [batch, sequence] model input: nowhere to find the
// sequence from.
// CHECK: error: sequence parallelism: no token embedding (a gather by a [batch, sequence] model input) to find the sequence dimension from
// FOUR: error: sequence parallelism: no token embedding
func.func @no_embedding(%x: tensor<2x4x8xf32> {weft.input = "x"},
                        %w1: tensor<8x16xf32> {weft.param = "fc.weight"},
                        %w2: tensor<16x8xf32> {weft.param = "out.weight"}) -> tensor<f32> {
  %h = weft.matmul %x, %w1 : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %y = weft.matmul %h, %w2 : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
  %z = weft.add %x, %y : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// A sequence of 6: two ranks divide it, four do not.
// (The embedding's g, at the gather's location, is the first to hold it.)
// FOUR: invalid.mlir:[[@LINE+5]]:8: error: sequence parallelism: shard.all_reduce holds the sequence in a dimension of 6, which 4 tensor ranks do not divide
func.func @short_sequence(%tokens: tensor<2x6xi64> {weft.input = "tokens"},
                          %wte: tensor<16x8xf32> {weft.param = "wte"},
                          %w1: tensor<8x16xf32> {weft.param = "fc.weight"},
                          %w2: tensor<16x8xf32> {weft.param = "out.weight"}) -> tensor<f32> {
  %x = weft.gather %wte, %tokens {axis = 0 : i64} : (tensor<16x8xf32>, tensor<2x6xi64>) -> tensor<2x6x8xf32>
  %h = weft.matmul %x, %w1 : (tensor<2x6x8xf32>, tensor<8x16xf32>) -> tensor<2x6x16xf32>
  %y = weft.matmul %h, %w2 : (tensor<2x6x16xf32>, tensor<16x8xf32>) -> tensor<2x6x8xf32>
  %z = weft.add %x, %y : (tensor<2x6x8xf32>, tensor<2x6x8xf32>) -> tensor<2x6x8xf32> loc("residual")
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x6x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----
// An add of the residual stream and its own transpose: one value would
// hold the sequence in dimension 1 and in dimension 2.
// CHECK: error: {{.*}}sequence parallelism: '{{mix|swap}}' (weft.{{add|transpose}}) reads the sequence in dimension {{[12]}} of a value that holds it in dimension {{[12]}}
// FOUR: error: {{.*}}sequence parallelism: '{{mix|swap}}' (weft.{{add|transpose}}) reads the sequence
func.func @two_sequences(%tokens: tensor<2x4xi64> {weft.input = "tokens"},
                         %wte: tensor<16x4xf32> {weft.param = "wte"},
                         %w1: tensor<4x16xf32> {weft.param = "fc.weight"},
                         %w2: tensor<16x4xf32> {weft.param = "out.weight"}) -> tensor<f32> {
  %x = weft.gather %wte, %tokens {axis = 0 : i64} : (tensor<16x4xf32>, tensor<2x4xi64>) -> tensor<2x4x4xf32>
  %h = weft.matmul %x, %w1 : (tensor<2x4x4xf32>, tensor<4x16xf32>) -> tensor<2x4x16xf32>
  %y = weft.matmul %h, %w2 : (tensor<2x4x16xf32>, tensor<16x4xf32>) -> tensor<2x4x4xf32>
  %r = weft.add %x, %y : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %t = weft.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("swap")
  %z = weft.add %r, %t : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32> loc("mix")
  %l = weft.reduce_sum %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
