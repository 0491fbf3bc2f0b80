// RUN: weft-opt %s --weft-mixed-precision="precision=bf16 fp32-residual=true" | FileCheck %s
// RUN: weft-opt %s --weft-mixed-precision="precision=bf16" | FileCheck %s --check-prefix=BF16

// --fp32-residual-connection: the embedding lookup is read in f32, so the
// residual sum runs in f32 while the block's matmul stays bf16.
// CHECK-LABEL: func.func @residual
// CHECK: %[[E:.*]] = weft.gather %{{.*}} -> tensor<4x8xbf16>
// CHECK: %[[E32:.*]] = weft.cast %[[E]] {nearest_even = true, to = f32} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK: weft.matmul {{.*}} -> tensor<4x8xbf16>
// CHECK: weft.add %[[E32]], %{{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// Without it the residual sum is bf16 (both operands are).
// BF16: weft.add {{.*}} : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
func.func @residual(%t: tensor<4xi64> {weft.input = "t"},
                    %table: tensor<16x8xf32> {weft.param = "wte"},
                    %w: tensor<8x8xf32> {weft.param = "w"}) -> tensor<4x8xf32> {
  %e = weft.gather %table, %t {axis = 0 : i64} : (tensor<16x8xf32>, tensor<4xi64>) -> tensor<4x8xf32>
  %h = weft.matmul %e, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = weft.add %e, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
