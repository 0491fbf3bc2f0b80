// RUN: weft-opt %s --split-input-file --weft-append-optimizer="optimizer=rmsprop" --verify-diagnostics

// expected-error @+1 {{unknown optimizer 'rmsprop' (expected sgd or adamw)}}
func.func @step(%w: tensor<3xf32> {weft.param = "w"}) -> tensor<f32> {
  %0 = weft.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
