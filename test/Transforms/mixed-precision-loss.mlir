// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 --weft-autodiff | FileCheck %s --check-prefix=GRAD

// A language model's loss on bf16 logits: it reads them as they are and
// keeps f32 log-probabilities (log_prob_type), no widened copy.
// CHECK-LABEL: func.func @lm_loss
// CHECK: %[[Y:.*]] = weft.matmul {{.*}} -> tensor<8x16xbf16>
// CHECK-NEXT: %{{.*}}, %{{.*}} = weft.softmax_cross_entropy %[[Y]], %arg1 {log_prob_type = f32} : (tensor<8x16xbf16>, tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>)
// The gradient is written in bf16 (grad_type), not cast down.
// GRAD-LABEL: func.func @lm_loss
// GRAD: %[[D:.*]] = weft.softmax_cross_entropy_grad {{.*}} {grad_type = bf16, {{.*}}} : (tensor<8x16xf32>, tensor<8xi64>, tensor<f32>) -> tensor<8x16xbf16>
// GRAD-NOT: weft.cast %[[D]]
func.func @lm_loss(%x: tensor<8x4xf32> {weft.input = "x"},
                   %t: tensor<8xi64> {weft.input = "t"},
                   %w: tensor<4x16xf32> {weft.param = "w"}) -> tensor<f32> {
  %y = weft.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %l, %p = weft.softmax_cross_entropy %y, %t : (tensor<8x16xf32>, tensor<8xi64>) -> (tensor<f32>, tensor<8x16xf32>)
  return %l : tensor<f32>
}

// -----

// Class weights keep the f32 loss on widened scores.
// CHECK-LABEL: func.func @weighted
// CHECK: weft.cast %{{.*}} {nearest_even = true, to = f32} : (tensor<8x16xbf16>) -> tensor<8x16xf32>
// CHECK: weft.softmax_cross_entropy {{.*}} : (tensor<8x16xf32>, tensor<8xi64>, tensor<16xf32>) -> (tensor<f32>, tensor<8x16xf32>)
// CHECK-NOT: log_prob_type
func.func @weighted(%x: tensor<8x4xf32> {weft.input = "x"},
                    %t: tensor<8xi64> {weft.input = "t"},
                    %c: tensor<16xf32> {weft.input = "c"},
                    %w: tensor<4x16xf32> {weft.param = "w"}) -> tensor<f32> {
  %y = weft.matmul %x, %w : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %l, %p = weft.softmax_cross_entropy %y, %t, %c : (tensor<8x16xf32>, tensor<8xi64>, tensor<16xf32>) -> (tensor<f32>, tensor<8x16xf32>)
  return %l : tensor<f32>
}
