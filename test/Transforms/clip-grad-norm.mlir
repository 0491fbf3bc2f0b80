// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-clip-grad-norm=max-norm=0.5 | FileCheck %s

// torch.nn.utils.clip_grad_norm_(parameters, 0.5): the squares of every
// gradient the updates read summed, the coefficient min(1, 0.5 / (norm +
// 1e-6)), each gradient scaled by it before its update. One rank: no
// collectives, no weights.

// CHECK-LABEL: func.func @one_rank
// CHECK: %[[SQ0:.*]] = weft.mul %arg2, %arg2 {{.*}}#weft.task<U>
// CHECK: %[[S0:.*]] = weft.reduce_sum %[[SQ0]] {axes = array<i64: 0, 1>, keepdims = false
// CHECK: %[[SQ1:.*]] = weft.mul %arg3, %arg3
// CHECK: %[[S1:.*]] = weft.reduce_sum %[[SQ1]] {axes = array<i64: 0>, keepdims = false
// CHECK: %[[T:.*]] = weft.add %[[S0]], %[[S1]]
// CHECK: %[[N:.*]] = weft.sqrt %[[T]]
// CHECK: %[[EPS:.*]] = weft.constant {{.*}}dense<9.99999997E-7>
// CHECK: %[[D:.*]] = weft.add %[[N]], %[[EPS]]
// CHECK: %[[C:.*]] = weft.constant {{.*}}dense<5.000000e-01>
// CHECK: %[[Q:.*]] = weft.div %[[C]], %[[D]]
// CHECK: %[[ONE:.*]] = weft.constant {{.*}}dense<1.000000e+00>
// CHECK: %[[COEF:.*]] = weft.min %[[Q]], %[[ONE]]
// CHECK: %[[G0:.*]] = weft.mul %arg2, %[[COEF]]
// CHECK: %[[G1:.*]] = weft.mul %arg3, %[[COEF]]
// CHECK: weft.sgd %arg0, %[[G0]]
// CHECK: weft.sgd %arg1, %[[G1]]
func.func @one_rank(%w: tensor<2x3xf32> {weft.param = "w"}, %b: tensor<3xf32> {weft.param = "b"},
                    %gw: tensor<2x3xf32>, %gb: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %u0 = weft.sgd %w, %gw {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weft.task = #weft.task<U>, weight_decay = 0.0 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %u1 = weft.sgd %b, %gb {lr = 0.1 : f64, momentum = 0.0 : f64, nesterov = false, weft.task = #weft.task<U>, weight_decay = 0.0 : f64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %u0, %u1 : tensor<2x3xf32>, tensor<3xf32>
}

// -----

// expected-error @+1 {{weft-clip-grad-norm: no parameter updates to clip: run weft-append-optimizer first}}
func.func @no_updates(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
