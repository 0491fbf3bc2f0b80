// RUN: weft-opt %s --split-input-file --weft-fold-attention-transpose | FileCheck %s

// The gpt example's heads: q, k, v [B=2, S=8, H=4, D=16] swapped to
// [B, H, S, D], the output swapped back. The attention reads the
// projections and writes [B, S, H, D]; every transpose is gone, and the
// attributes (dropout, a tensor-parallel shard) carry over.
// CHECK-LABEL: func.func @heads
// CHECK-NEXT: %[[O:.*]], %[[S:.*]] = weft.attention %arg0, %arg1, %arg2 {causal = true, dropout_ratio = 1.000000e-01 : f64, layout = "bshd", scale = 2.500000e-01 : f64, weft.shard = {blocks = 1 : i64, dim = 1 : i64}} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
// CHECK-NEXT: return %[[O]]
func.func @heads(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %qt = weft.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %vt = weft.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %o, %s = weft.attention %qt, %kt, %vt {causal = true, dropout_ratio = 0.1 : f64, scale = 0.25 : f64, weft.shard = {blocks = 1 : i64, dim = 1 : i64}} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  %y = weft.transpose %o {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x8x16xf32>) -> tensor<2x8x4x16xf32>
  return %y : tensor<2x8x4x16xf32>
}

// -----

// Other readers of the output get one swap back to [B, H, S, Dv] (shared);
// a q transpose read elsewhere stays for that reader. Dv (8) may differ
// from D (16), and Sk (6) from Sq (5).
// CHECK-LABEL: func.func @other_readers
// CHECK-NEXT: %[[QT:.*]] = weft.transpose %arg0
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %arg0, %arg1, %arg2 {layout = "bshd", scale = 1.000000e+00 : f64} : (tensor<2x5x3x16xf32>, tensor<2x6x3x16xf32>, tensor<2x6x3x8xf32>) -> (tensor<2x5x3x8xf32>, tensor<2x3x5xf32>)
// CHECK-NEXT: %[[H:.*]] = weft.transpose %[[O]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x3x8xf32>) -> tensor<2x3x5x8xf32>
// CHECK-NEXT: %[[E:.*]] = weft.exp %[[H]]
// CHECK-NEXT: %[[N:.*]] = weft.neg %[[H]]
// CHECK-NEXT: return %[[E]], %[[N]], %[[QT]]
func.func @other_readers(%q: tensor<2x5x3x16xf32>, %k: tensor<2x6x3x16xf32>, %v: tensor<2x6x3x8xf32>) -> (tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x16xf32>) {
  %qt = weft.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x3x16xf32>) -> tensor<2x3x5x16xf32>
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x6x3x16xf32>) -> tensor<2x3x6x16xf32>
  %vt = weft.transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x6x3x8xf32>) -> tensor<2x3x6x8xf32>
  %o, %s = weft.attention %qt, %kt, %vt {scale = 1.0 : f64} : (tensor<2x3x5x16xf32>, tensor<2x3x6x16xf32>, tensor<2x3x6x8xf32>) -> (tensor<2x3x5x8xf32>, tensor<2x3x5xf32>)
  %e = weft.exp %o : tensor<2x3x5x8xf32>
  %n = weft.neg %o : tensor<2x3x5x8xf32>
  return %e, %n, %qt : tensor<2x3x5x8xf32>, tensor<2x3x5x8xf32>, tensor<2x3x5x16xf32>
}

// -----

// Left alone: v is not a head swap (another permutation), q, k and v of
// rank 3 (torch's MultiheadAttention), and an attention whose stats a
// backward already reads.
// CHECK-LABEL: func.func @not_folded
// CHECK-NOT: layout
// CHECK: return
func.func @not_folded(%q: tensor<2x8x4x16xf32>, %v: tensor<2x4x16x8xf32>,
                      %r: tensor<6x8x16xf32>, %g: tensor<2x4x8x16xf32>)
    -> (tensor<2x4x8x16xf32>, tensor<6x8x16xf32>, tensor<2x4x8x16xf32>) {
  %qt = weft.transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %vt = weft.transpose %v {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
  %o, %s = weft.attention %qt, %qt, %vt {scale = 1.0 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  %o3, %s3 = weft.attention %r, %r, %r {scale = 1.0 : f64} : (tensor<6x8x16xf32>, tensor<6x8x16xf32>, tensor<6x8x16xf32>) -> (tensor<6x8x16xf32>, tensor<6x8xf32>)
  %o2, %s2 = weft.attention %qt, %qt, %qt {scale = 1.0 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
  %dq, %dk, %dv = weft.attention_grad %qt, %qt, %qt, %o2, %s2, %g {scale = 1.0 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>)
  return %o, %o3, %dq : tensor<2x4x8x16xf32>, tensor<6x8x16xf32>, tensor<2x4x8x16xf32>
}
