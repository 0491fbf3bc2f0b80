// RUN: weft-opt %s --split-input-file --weft-fold-weight-transpose | FileCheck %s

// torch.nn.Linear's export, x [2, 3, 4] @ Transpose(W [5, 4]): one gemm
// reading W with transB, x's batch dims folded into rows by views; the
// transpose is gone.
// CHECK-LABEL: func.func @linear
// CHECK-NEXT: %[[X:.*]] = weft.reshape %arg0 {shape = array<i64: 6, 4>}
// CHECK-NEXT: %[[Y:.*]] = weft.gemm %[[X]], %arg1 {beta = 0.000000e+00 : f64, transB = true} : (tensor<6x4xf32>, tensor<5x4xf32>) -> tensor<6x5xf32>
// CHECK-NEXT: %[[O:.*]] = weft.reshape %[[Y]] {shape = array<i64: 2, 3, 5>}
// CHECK-NEXT: return %[[O]]
func.func @linear(%x: tensor<2x3x4xf32>, %w: tensor<5x4xf32>) -> tensor<2x3x5xf32> {
  %wt = weft.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %y = weft.matmul %x, %wt : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// A 2-D x needs no reshapes; a transpose something else reads stays.
// CHECK-LABEL: func.func @kept_transpose
// CHECK-NEXT: %[[T:.*]] = weft.transpose %arg1
// CHECK-NEXT: %[[Y:.*]] = weft.gemm %arg0, %arg1 {beta = 0.000000e+00 : f64, transB = true}
// CHECK-NEXT: return %[[Y]], %[[T]]
func.func @kept_transpose(%x: tensor<3x4xf32>, %w: tensor<5x4xf32>) -> (tensor<3x5xf32>, tensor<4x5xf32>) {
  %wt = weft.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %y = weft.matmul %x, %wt : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %y, %wt : tensor<3x5xf32>, tensor<4x5xf32>
}

// -----

// Not a Linear: a batched right operand (attention's k^T), and a vector x.
// CHECK-LABEL: func.func @not_linear
// CHECK-NOT: weft.gemm
// CHECK: weft.matmul
// CHECK: weft.matmul
func.func @not_linear(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>,
                      %v: tensor<4xf32>, %w: tensor<5x4xf32>) -> (tensor<2x3x3xf32>, tensor<5xf32>) {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = weft.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %wt = weft.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x4xf32>) -> tensor<4x5xf32>
  %y = weft.matmul %v, %wt : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %s, %y : tensor<2x3x3xf32>, tensor<5xf32>
}
