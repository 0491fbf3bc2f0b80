// RUN: weft-opt %s --split-input-file --weft-fold-attention-split | FileCheck %s

// The QKV projection's [B, S, 3 H D] split into q, k, v, each reshaped to
// [B, S, H, D]: the attention reads the projection itself, packed as
// [B, S, 3, H, D]; split and reshapes go, every attribute stays.
// CHECK-LABEL: func.func @packed
// CHECK-NOT: weft.split
// CHECK: %[[P:.*]] = weft.reshape %arg0 {shape = array<i64: 2, 8, 3, 4, 16>} : (tensor<2x8x192xf32>) -> tensor<2x8x3x4x16xf32>
// CHECK-NOT: weft.split
// CHECK: %{{.*}}, %{{.*}} = weft.attention %[[P]], %[[P]], %[[P]] {causal = true, dropout_ratio = 1.000000e-01 : f64, layout = "bs3hd", scale = 2.500000e-01 : f64}
// CHECK-SAME: -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
func.func @packed(%x: tensor<2x8x192xf32>) -> tensor<2x8x4x16xf32> {
  %q, %k, %v = weft.split %x {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %qh = weft.reshape %q {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %kh = weft.reshape %k {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %vh = weft.reshape %v {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o, %s = weft.attention %qh, %kh, %vh {causal = true, dropout_ratio = 0.1 : f64, layout = "bshd", scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %o : tensor<2x8x4x16xf32>
}

// -----

// Another reader of k keeps its reshape and the split; the attention reads
// the packed projection all the same.
// CHECK-LABEL: func.func @shared
// CHECK: %[[S:.*]]:3 = weft.split %arg0
// CHECK: %[[K:.*]] = weft.reshape %[[S]]#1
// CHECK: %[[P:.*]] = weft.reshape %arg0
// CHECK: weft.attention %[[P]], %[[P]], %[[P]] {layout = "bs3hd"
// CHECK: return %{{.*}}, %[[K]]
func.func @shared(%x: tensor<2x8x192xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) {
  %q, %k, %v = weft.split %x {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %qh = weft.reshape %q {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %kh = weft.reshape %k {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %vh = weft.reshape %v {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o, %s = weft.attention %qh, %kh, %vh {layout = "bshd", scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %o, %kh : tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>
}

// -----

// Left alone: k and q swapped (part 0 read as k).
// CHECK-LABEL: func.func @swapped
// CHECK-NOT: "bs3hd"
// CHECK: weft.split
func.func @swapped(%x: tensor<2x8x192xf32>) -> tensor<2x8x4x16xf32> {
  %q, %k, %v = weft.split %x {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %qh = weft.reshape %q {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %kh = weft.reshape %k {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %vh = weft.reshape %v {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o, %s = weft.attention %kh, %qh, %vh {layout = "bshd", scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %o : tensor<2x8x4x16xf32>
}

// -----

// Left alone: the pieces are sequence ranges (a split of dim 1), not the
// last dim's q, k, v.
// CHECK-LABEL: func.func @sequence
// CHECK-NOT: "bs3hd"
// CHECK: weft.split
func.func @sequence(%x: tensor<2x24x64xf32>) -> tensor<2x8x4x16xf32> {
  %q, %k, %v = weft.split %x {axis = 1 : i64, sizes = array<i64: 8, 8, 8>} : (tensor<2x24x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %qh = weft.reshape %q {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %kh = weft.reshape %k {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %vh = weft.reshape %v {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o, %s = weft.attention %qh, %kh, %vh {layout = "bshd", scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %o : tensor<2x8x4x16xf32>
}

// -----

// Left alone: an attention on [.., S, D] (no "bshd" layout), and one whose
// stats a backward already reads.
// CHECK-LABEL: func.func @unlaid
// CHECK-NOT: "bs3hd"
// CHECK: return
func.func @unlaid(%x: tensor<2x8x192xf32>, %y: tensor<2x8x192xf32>) -> (tensor<8x8x16xf32>, tensor<2x4x8xf32>) {
  %q, %k, %v = weft.split %x {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %qh = weft.reshape %q {shape = array<i64: 8, 8, 16>} : (tensor<2x8x64xf32>) -> tensor<8x8x16xf32>
  %kh = weft.reshape %k {shape = array<i64: 8, 8, 16>} : (tensor<2x8x64xf32>) -> tensor<8x8x16xf32>
  %vh = weft.reshape %v {shape = array<i64: 8, 8, 16>} : (tensor<2x8x64xf32>) -> tensor<8x8x16xf32>
  %o, %s = weft.attention %qh, %kh, %vh {scale = 0.25 : f64} : (tensor<8x8x16xf32>, tensor<8x8x16xf32>, tensor<8x8x16xf32>) -> (tensor<8x8x16xf32>, tensor<8x8xf32>)
  %a, %b, %c = weft.split %y {axis = 2 : i64, sizes = array<i64: 64, 64, 64>} : (tensor<2x8x192xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
  %ah = weft.reshape %a {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %bh = weft.reshape %b {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %ch = weft.reshape %c {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %o2, %s2 = weft.attention %ah, %bh, %ch {layout = "bshd", scale = 0.25 : f64} : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x4x8xf32>)
  return %o, %s2 : tensor<8x8x16xf32>, tensor<2x4x8xf32>
}
