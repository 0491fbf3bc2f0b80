// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-append-optimizer | FileCheck %s --check-prefix=ADAMW
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-append-optimizer="optimizer=sgd lr=0.1 momentum=0.9 nesterov=true" | FileCheck %s --check-prefix=SGD
// RUN: weft-opt %s --split-input-file --weft-autodiff --weft-append-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=PLAIN

// AdamW: two zero-initialised state arguments per parameter, an in-place
// update, torch's defaults (weight decay 0.01).
// ADAMW-LABEL: func.func @step
// ADAMW-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {weft.param = "w"}
// ADAMW-SAME: %[[M:[a-z0-9]+]]: tensor<3xf32> {weft.optimizer_state = "w.exp_avg"}
// ADAMW-SAME: %[[V:[a-z0-9]+]]: tensor<3xf32> {weft.optimizer_state = "w.exp_avg_sq"}
// ADAMW-SAME: -> (tensor<f32>, tensor<3xf32> {weft.update = "w"}, tensor<3xf32> {weft.update = "w.exp_avg"}, tensor<3xf32> {weft.update = "w.exp_avg_sq"})
// ADAMW: %[[P:.*]], %[[NM:.*]], %[[NV:.*]] = weft.adamw %[[W]], %{{.*}}, %[[M]], %[[V]] {beta1 = 9.000000e-01 : f64, beta2 = {{0.9989999.*|9.990000e-01}} : f64, eps = 1.000000e-08 : f64, lr = 1.000000e-03 : f64, weft.task = #weft.task<U>, weight_decay = 1.000000e-02 : f64} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// ADAMW: return %{{.*}}, %[[P]], %[[NM]], %[[NV]]

// SGD with momentum: one buffer; without momentum: none, weight decay 0.
// SGD-LABEL: func.func @step
// SGD-SAME: {weft.optimizer_state = "w.momentum_buffer"}
// SGD: weft.sgd %{{.*}}, %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f64, momentum = 9.000000e-01 : f64, nesterov = true, weft.task = #weft.task<U>, weight_decay = 0.000000e+00 : f64} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
// PLAIN-NOT: weft.optimizer_state
// PLAIN: weft.sgd %{{.*}}, %{{.*}} {lr = 1.000000e-03 : f64, momentum = 0.000000e+00 : f64, nesterov = false, weft.task = #weft.task<U>, weight_decay = 0.000000e+00 : f64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
func.func @step(%x: tensor<3xf32> {weft.input = "x"}, %w: tensor<3xf32> {weft.param = "w"}) -> tensor<f32> {
  %0 = weft.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = weft.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
