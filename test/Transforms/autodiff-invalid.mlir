// RUN: weft-opt %s --split-input-file --weft-autodiff --verify-diagnostics

// expected-error @+1 {{training needs the model to return one scalar float loss; @not_scalar returns 'tensor<4xf32>'}}
func.func @not_scalar(%w: tensor<4xf32> {weft.param = "w"}) -> tensor<4xf32> {
  %0 = weft.relu %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{training needs a parameter the loss depends on; the loss of @no_param depends on none}}
func.func @no_param(%x: tensor<4xf32> {weft.input = "x"}) -> tensor<f32> {
  %0 = weft.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @no_rule(%w: tensor<4xf32> {weft.param = "w"}) -> tensor<f32> {
  // Backward-only ops have no derivative of their own (no second order).
  // expected-error @+1 {{'weft.relu_grad' op has no gradient rule, but the loss depends on it through a parameter}}
  %0 = weft.relu_grad %w, %w : tensor<4xf32>
  %1 = weft.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

func.func @strided(%w: tensor<4xf32> {weft.param = "w"}) -> tensor<f32> {
  // expected-error @+1 {{'weft.slice' op autodiff: slices with steps other than 1 have no gradient rule yet}}
  %0 = weft.slice %w {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 2>} : (tensor<4xf32>) -> tensor<2xf32>
  %1 = weft.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
