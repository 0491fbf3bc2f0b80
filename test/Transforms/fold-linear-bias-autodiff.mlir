// RUN: weft-opt %s --weft-fold-linear-bias --weft-autodiff | FileCheck %s

// Differentiated after the fold, the bias's gradient is the column sum of
// the gemm output's gradient, as the add's bias gradient was; x's and W's
// are the gemm's. Beta 1: no product scales dY first.
// CHECK-LABEL: func.func @linear
// CHECK: weft.gemm %{{.*}}, %arg1, %arg2 {transB = true}
// CHECK-NOT: weft.add
// CHECK-NOT: weft.mul {{.*}}tensor<6x5xf32>
// CHECK: %[[DB:.*]] = weft.reduce_sum %{{.*}} {axes = array<i64: 0>, keepdims = {{.*}}weft.task = #weft.task<B>} : (tensor<6x5xf32>) -> tensor<{{(1x)?}}5xf32>
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}
func.func @linear(%x: tensor<2x3x4xf32> {weft.input = "x"},
                  %w: tensor<5x4xf32> {weft.param = "w"},
                  %b: tensor<5xf32> {weft.param = "b"}) -> tensor<f32> {
  %x2 = weft.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %y2 = weft.gemm %x2, %w {beta = 0.0 : f64, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
  %y = weft.reshape %y2 {shape = array<i64: 2, 3, 5>} : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  %z = weft.add %b, %y : (tensor<5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %l = weft.reduce_mean %z {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
