// The update ops' verifiers: mixed-precision master copies and the loss
// scaler (weft-append-optimizer, weft-loss-scaling).
// RUN: weft-opt %s --split-input-file --verify-diagnostics

func.func @master_of_f32(%p: tensor<4xf32>, %m: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a master copy needs an f16 or bf16 parameter}}
  %0:4 = weft.adamw %p, %p, %m, %m master %m {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @master_shape(%p: tensor<4xbf16>, %m: tensor<4xf32>, %w: tensor<5xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{the master copy must be the parameter's shape in f32}}
  %0:4 = weft.adamw %p, %p, %m, %m master %w {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<5xf32>) -> (tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<5xf32>)
  return %0#0 : tensor<4xbf16>
}

// -----

func.func @state_beside_master(%p: tensor<4xbf16>, %m: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{optimizer state must have the master's type}}
  %0:4 = weft.adamw %p, %p, %p, %p master %m {lr = 1.0e-3 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>)
  return %0#0 : tensor<4xbf16>
}

// -----

func.func @scaler_without_verdict(%p: tensor<4xf32>, %s: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a loss scaler comes with found_inf}}
  %0 = weft.sgd %p, %p scaler %s {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @scaler_shape(%p: tensor<4xf32>, %s: tensor<2xf32>, %f: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{the loss scaler is tensor<3xf32>, found_inf tensor<f32>}}
  %0 = weft.sgd %p, %p scaler %s found_inf %f {lr = 0.1 : f64, momentum = 0.0 : f64, weight_decay = 0.0 : f64, nesterov = false} : (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @found_inf_result(%g: tensor<4xf16>) -> tensor<1xf32> {
  // expected-error @+1 {{returns tensor<f32>}}
  %0 = weft.found_inf %g : (tensor<4xf16>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @backoff_range(%s: tensor<3xf32>, %f: tensor<f32>) -> tensor<3xf32> {
  // expected-error @+1 {{needs growth_interval >= 1, growth_factor > 1 and backoff_factor in (0, 1)}}
  %0 = weft.update_loss_scale %s, %f {growth_factor = 2.0 : f64, backoff_factor = 1.5 : f64, growth_interval = 2000 : i64} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
