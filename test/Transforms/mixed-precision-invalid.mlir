// RUN: weft-opt %s --weft-mixed-precision=precision=fp8 --verify-diagnostics

// expected-error @+1 {{weft-mixed-precision: precision 'fp8' is not bf16, f16 or f32}}
func.func @step(%w: tensor<3xf32> {weft.param = "w"}) -> tensor<f32> {
  %0 = weft.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
