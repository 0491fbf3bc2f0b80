// RUN: weft-opt %s --weft-mixed-precision=precision=bf16 | FileCheck %s
// RUN: weft-opt %s --weft-mixed-precision=precision=f16 | FileCheck %s --check-prefix=F16
// RUN: weft-opt %s --weft-mixed-precision=precision=f32 | FileCheck %s --check-prefix=F32
// RUN: weft-opt %s --weft-mixed-precision=precision=bf16 --weft-autodiff --weft-append-optimizer | FileCheck %s --check-prefix=TRAIN
// RUN: weft-opt %s --weft-mixed-precision=precision=bf16 --weft-autodiff --weft-append-optimizer="optimizer=sgd momentum=0.9" | FileCheck %s --check-prefix=SGD
// RUN: weft-opt %s --weft-mixed-precision="precision=f16 loss-scaling=true" --weft-autodiff --weft-append-optimizer --weft-loss-scaling | FileCheck %s --check-prefix=SCALED

// A linear layer, softmax and a loss: the parameters become bf16 working
// copies, the matmul runs in bf16 (its f32 input cast down), the bias add
// stays bf16 (both operands are), softmax and the loss run in f32, the
// scalar divisor (rank 0) does not widen the bf16 tensor it divides and
// is a bf16 literal (no cast left, and no f32 literal).
// CHECK-LABEL: func.func @linear
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32> {weft.input = "x"}
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<8x16xbf16> {weft.param = "w"}
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<16xbf16> {weft.param = "b"}
// CHECK-SAME: -> tensor<f32>
// CHECK: %[[X16:.*]] = weft.cast %[[X]] {nearest_even = true, to = bf16} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: %[[Y:.*]] = weft.matmul %[[X16]], %[[W]] : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
// CHECK: %[[Z:.*]] = weft.add %[[Y]], %[[B]] : (tensor<4x16xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
// CHECK: %[[G:.*]] = weft.gelu %[[Z]] : tensor<4x16xbf16>
// CHECK-NOT: tensor<f32>
// CHECK: %[[C16:.*]] = weft.constant dense<2.000000e+00> : tensor<bf16>
// CHECK-NOT: weft.cast {{.*}}tensor<bf16>
// CHECK: %[[D:.*]] = weft.div %[[G]], %[[C16]] : (tensor<4x16xbf16>, tensor<bf16>) -> tensor<4x16xbf16>
// CHECK: %[[D32:.*]] = weft.cast %[[D]] {nearest_even = true, to = f32} : (tensor<4x16xbf16>) -> tensor<4x16xf32>
// CHECK: weft.softmax %[[D32]] {{.*}}: tensor<4x16xf32>
// CHECK: weft.softmax_cross_entropy {{.*}} -> (tensor<f32>, tensor<4x16xf32>)
// F16: tensor<8x16xf16> {weft.param = "w"}
// F16: weft.matmul {{.*}} -> tensor<4x16xf16>
// F32-NOT: weft.cast
// F32-NOT: bf16

// Training: the backward is bf16 where the forward is (the gradient of the
// cast is the cast back, rounded), the parameters' gradients are bf16, and
// AdamW keeps an f32 master copy beside f32 moments, initialised from the
// parameter (weft.master_of).
// TRAIN-LABEL: func.func @linear
// TRAIN-SAME: tensor<8x16xbf16> {weft.param = "w"}
// TRAIN-SAME: %[[WM:[a-z0-9]+]]: tensor<8x16xf32> {weft.master_of = "w", weft.optimizer_state = "w.master"}
// TRAIN-SAME: %[[M:[a-z0-9]+]]: tensor<8x16xf32> {weft.optimizer_state = "w.exp_avg"}
// TRAIN-SAME: %[[V:[a-z0-9]+]]: tensor<8x16xf32> {weft.optimizer_state = "w.exp_avg_sq"}
// TRAIN-SAME: tensor<8x16xbf16> {weft.update = "w"}
// TRAIN-SAME: tensor<8x16xf32> {weft.update = "w.master"}
// TRAIN: weft.cast {{.*}} {nearest_even = true, to = bf16, weft.task = #weft.task<B>} : (tensor<4x16xf32>) -> tensor<4x16xbf16>
// TRAIN: weft.adamw %{{.*}}, %{{.*}}, %[[M]], %[[V]] master %[[WM]] {{.*}} : (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xbf16>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>)
// SGD: weft.sgd %{{.*}}, %{{.*}}, %{{.*}} master %{{.*}} {{.*}} : (tensor<8x16xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xbf16>, tensor<8x16xf32>, tensor<8x16xf32>)
// f16 with loss scaling (GradScaler): the scaler state is optimizer state,
// the backward is seeded with its scale (element 0), one check of every
// gradient gates the updates, which unscale, and the scale is updated last.
// SCALED-LABEL: func.func @linear
// SCALED-SAME: %[[S:[a-z0-9]+]]: tensor<3xf32> {weft.loss_scaler, weft.optimizer_state = "loss_scaler"}
// SCALED-SAME: tensor<3xf32> {weft.update = "loss_scaler"}
// SCALED: weft.slice %[[S]] {ends = array<i64: 1>, starts = array<i64: 0>
// SCALED: %[[F:.*]] = weft.found_inf %{{.*}}, %{{.*}} {weft.task = #weft.task<U>} : (tensor<8x16xf16>, tensor<16xf16>) -> tensor<f32>
// SCALED: weft.adamw {{.*}} master %{{.*}} scaler %[[S]] found_inf %[[F]]
// SCALED: weft.adamw {{.*}} master %{{.*}} scaler %[[S]] found_inf %[[F]]
// SCALED: weft.update_loss_scale %[[S]], %[[F]] {backoff_factor = 5.000000e-01 : f64, growth_factor = 2.000000e+00 : f64, growth_interval = 2000 : i64
func.func @linear(%x: tensor<4x8xf32> {weft.input = "x"},
                  %t: tensor<4xi64> {weft.input = "t"},
                  %w: tensor<8x16xf32> {weft.param = "w"},
                  %b: tensor<16xf32> {weft.param = "b"}) -> tensor<f32> {
  %y = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %z = weft.add %y, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = weft.gelu %z : tensor<4x16xf32>
  %c = weft.constant dense<2.0> : tensor<f32>
  %d = weft.div %g, %c : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
  %s = weft.softmax %d {axis = 1 : i64} : tensor<4x16xf32>
  %l, %lp = weft.softmax_cross_entropy %s, %t : (tensor<4x16xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x16xf32>)
  return %l : tensor<f32>
}

