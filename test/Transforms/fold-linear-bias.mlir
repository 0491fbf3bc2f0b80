// RUN: weft-opt %s --split-input-file --weft-fold-linear-bias | FileCheck %s

// torch.nn.Linear after weft-fold-weight-transpose: the bias add (bias on
// either side) becomes the gemm's C, beta 1, and the view follows.
// CHECK-LABEL: func.func @linear
// CHECK-NEXT: %[[X:.*]] = weft.reshape %arg0 {shape = array<i64: 6, 4>}
// CHECK-NEXT: %[[Y:.*]] = weft.gemm %[[X]], %arg1, %arg2 {transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<6x5xf32>
// CHECK-NEXT: %[[Z:.*]] = weft.reshape %[[Y]] {shape = array<i64: 2, 3, 5>}
// CHECK-NEXT: %[[Y2:.*]] = weft.gemm %[[X]], %arg1, %arg2 {transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<6x5xf32>
// CHECK-NEXT: return %[[Z]], %[[Y2]]
func.func @linear(%x: tensor<2x3x4xf32> {weft.input = "x"},
                  %w: tensor<5x4xf32> {weft.param = "w"},
                  %b: tensor<5xf32> {weft.param = "b"}) -> (tensor<2x3x5xf32>, tensor<6x5xf32>) {
  %x2 = weft.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %y2 = weft.gemm %x2, %w {beta = 0.0 : f64, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
  %y = weft.reshape %y2 {shape = array<i64: 2, 3, 5>} : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  %z = weft.add %b, %y : (tensor<5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %u = weft.gemm %x2, %w {beta = 0.0 : f64, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
  %v = weft.add %u, %b : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  return %z, %v : tensor<2x3x5xf32>, tensor<6x5xf32>
}

// -----

// Left alone: a product read twice, a gemm that has a C already, a
// per-row "bias" [6, 1], and an add that broadcasts the product.
// CHECK-LABEL: func.func @not_bias
// CHECK-COUNT-4: weft.add
// CHECK-NOT: weft.add
func.func @not_bias(%x: tensor<6x4xf32>, %w: tensor<5x4xf32>, %b: tensor<5xf32>,
                    %r: tensor<6x1xf32>, %big: tensor<2x6x5xf32>)
    -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<2x6x5xf32>) {
  %p = weft.gemm %x, %w {beta = 0.0 : f64, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
  %a = weft.add %p, %b : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %c = weft.gemm %x, %w, %b {transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %d = weft.add %c, %b : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %e = weft.gemm %x, %w {beta = 0.0 : f64, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
  %f = weft.add %e, %r : (tensor<6x5xf32>, tensor<6x1xf32>) -> tensor<6x5xf32>
  %g = weft.gemm %x, %w {beta = 0.0 : f64, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
  %k = weft.add %g, %big : (tensor<6x5xf32>, tensor<2x6x5xf32>) -> tensor<2x6x5xf32>
  return %a, %p, %d, %f, %k : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>, tensor<2x6x5xf32>
}
