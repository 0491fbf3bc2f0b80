// RUN: weft-opt %s --split-input-file --weft-fold-loss-log-prob | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-fold-loss-log-prob --weft-autodiff | FileCheck %s --check-prefix=GRAD

// Nothing reads the log-probabilities: the loss keeps one log-sum-exp per
// sample ([N, d...], here [4, 3]) and its gradient reads the scores and it.
// CHECK-LABEL: func.func @unread
// CHECK: weft.softmax_cross_entropy %arg0, %arg1 {log_sum_exp} : (tensor<4x5x3xf32>, tensor<4x3xi64>) -> (tensor<f32>, tensor<4x3xf32>)
// GRAD-LABEL: func.func @unread
// GRAD: %[[L:.*]], %[[LSE:.*]] = weft.softmax_cross_entropy %arg0, %arg1 {log_sum_exp}
// GRAD: weft.softmax_cross_entropy_grad %arg0, %arg1, %{{.*}} log_sum_exp %[[LSE]] {{.*}} : (tensor<4x5x3xf32>, tensor<4x3xi64>, tensor<f32>, tensor<4x3xf32>) -> tensor<4x5x3xf32>
func.func @unread(%s: tensor<4x5x3xf32> {weft.param = "s"},
                  %t: tensor<4x3xi64> {weft.input = "t"}) -> tensor<f32> {
  %l, %p = weft.softmax_cross_entropy %s, %t : (tensor<4x5x3xf32>, tensor<4x3xi64>) -> (tensor<f32>, tensor<4x5x3xf32>)
  return %l : tensor<f32>
}

// -----

// Class weights and mixed precision's f32 beside bf16 scores: the
// log-sum-exp has log_prob_type; the gradient has the scores' type.
// CHECK-LABEL: func.func @mixed
// CHECK: weft.softmax_cross_entropy %arg0, %arg1 {log_prob_type = f32, log_sum_exp} : (tensor<4x5xbf16>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
// CHECK: weft.softmax_cross_entropy %{{.*}}, %arg1, %arg2 {log_sum_exp, reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> (tensor<f32>, tensor<4xf32>)
// GRAD-LABEL: func.func @mixed
// GRAD: weft.softmax_cross_entropy_grad %{{.*}}, %arg1, %{{.*}}, %arg2 log_sum_exp %{{.*}} {reduction = "sum", {{.*}}} : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>, tensor<5xf32>, tensor<4xf32>) -> tensor<4x5xf32>
// GRAD: weft.softmax_cross_entropy_grad %arg0, %arg1, %{{.*}} log_sum_exp %{{.*}} {weft.task = #weft.task<B>} : (tensor<4x5xbf16>, tensor<4xi64>, tensor<f32>, tensor<4xf32>) -> tensor<4x5xbf16>
func.func @mixed(%s: tensor<4x5xbf16> {weft.param = "s"},
                 %t: tensor<4xi64> {weft.input = "t"},
                 %c: tensor<5xf32> {weft.input = "c"}) -> tensor<f32> {
  %l, %p = weft.softmax_cross_entropy %s, %t {log_prob_type = f32} : (tensor<4x5xbf16>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
  %w = weft.cast %s {to = f32} : (tensor<4x5xbf16>) -> tensor<4x5xf32>
  %m, %q = weft.softmax_cross_entropy %w, %t, %c {reduction = "sum"} : (tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> (tensor<f32>, tensor<4x5xf32>)
  %sum = weft.add %l, %m : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %sum : tensor<f32>
}

// -----

// Something reads the log-probabilities (here a statistic the loss does
// not depend on): they stay, and so does the gradient that reads them.
// CHECK-LABEL: func.func @read
// CHECK-NOT: log_sum_exp
// GRAD-LABEL: func.func @read
// GRAD-NOT: log_sum_exp
// GRAD: weft.softmax_cross_entropy_grad %log_prob, %arg1
// GRAD-NOT: log_sum_exp
func.func @read(%s: tensor<4x5xf32> {weft.param = "s"},
                %t: tensor<4xi64> {weft.input = "t"}) -> tensor<f32> {
  %l, %p = weft.softmax_cross_entropy %s, %t : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x5xf32>)
  %h = weft.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
