// RUN: weft-opt %s --weft-mixed-precision=precision=bf16 | FileCheck %s

// A residual sum of an f32 tensor and a bf16 one is f32 (the widest
// tensor); a result the function declares f32 is cast back; state (batch
// norm statistics) and integer inputs keep their types.
// CHECK-LABEL: func.func @promote
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {weft.input = "x"}
// CHECK: %[[Y:.*]] = weft.matmul {{.*}} -> tensor<2x4xbf16>
// CHECK: %[[Y32:.*]] = weft.cast %[[Y]] {nearest_even = true, to = f32}
// CHECK: %[[S:.*]] = weft.add %[[X]], %[[Y32]] : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[R:.*]] = weft.relu %[[Y]] : tensor<2x4xbf16>
// CHECK: %[[R32:.*]] = weft.cast %[[R]] {nearest_even = true, to = f32}
// CHECK: return %[[S]], %[[R32]] : tensor<2x4xf32>, tensor<2x4xf32>
func.func @promote(%x: tensor<2x4xf32> {weft.input = "x"},
                   %w: tensor<4x4xf32> {weft.param = "w"})
    -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %y = weft.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %s = weft.add %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = weft.relu %y : tensor<2x4xf32>
  return %s, %r : tensor<2x4xf32>, tensor<2x4xf32>
}
