// RUN: weft-opt %s --weft-mixed-precision=precision=bf16 --verify-diagnostics

// Only f32 values become 16-bit: an f64 model asks for its own precision.
func.func @step(%w: tensor<3xf64> {weft.param = "w"}) -> tensor<f64> {
  // expected-error @+1 {{--precision bf16 needs an f32 model; this value is 'tensor<f64>'}}
  %0 = weft.reduce_sum %w {axes = array<i64: 0>, keepdims = false} : (tensor<3xf64>) -> tensor<f64>
  return %0 : tensor<f64>
}
