// RUN: weft-opt %s --weft-autodiff --weft-plan-memory 2>&1 >/dev/null | FileCheck %s
// RUN: weft-opt %s --weft-autodiff --weft-checkpoint=policy=full --weft-plan-memory 2>&1 >/dev/null | FileCheck %s --check-prefix=FULL
// RUN: weft-opt %s --weft-autodiff --weft-plan-memory="activation-dtype=f16 list-kept" 2>&1 >/dev/null | FileCheck %s --check-prefix=F16
// RUN: not weft-opt %s --weft-autodiff --weft-plan-memory=activation-dtype=f8 2>&1 >/dev/null | FileCheck %s --check-prefix=BAD

// A two-layer MLP, batch 4, width 8, f32 (128 bytes per activation, 256 per
// weight). The backward reads the first matmul's result (relu_grad), the
// relu output (the second matmul's weight gradient) and the input: two
// activations are kept from the forward, 256 bytes. With full recompute,
// none are kept: the backward reads clones made in the backward.
// CHECK: memory @mlp: parameters 512
// CHECK: memory @mlp: inputs 128
// CHECK: memory @mlp: arena
// CHECK: memory @mlp: max_kept_activations 256
// FULL: memory @mlp: max_kept_activations 0
// With 16-bit activations the two kept activations are 64 bytes each;
// parameters and inputs keep f32.
// F16: memory @mlp: kept weft.matmul tensor<4x8xf32> 64
// F16-NEXT: memory @mlp: kept weft.relu tensor<4x8xf32> 64
// F16-NEXT: memory @mlp: parameters 512
// F16-NEXT: memory @mlp: inputs 128
// F16: memory @mlp: max_kept_activations 128
// BAD: error: weft-plan-memory: activation-dtype 'f8' is not f32, f16 or bf16
func.func @mlp(%x: tensor<4x8xf32> {weft.input = "x"}, %w0: tensor<8x8xf32> {weft.param = "w0"},
               %w1: tensor<8x8xf32> {weft.param = "w1"}) -> tensor<f32> {
  %h = weft.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = weft.relu %h : tensor<4x8xf32>
  %y = weft.matmul %r, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
