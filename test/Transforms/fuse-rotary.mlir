// RUN: weft-opt %s --split-input-file --weft-fuse-rotary | FileCheck %s

// Hugging Face's apply_rotary_pos_emb as torch exports it: q * cos +
// cat(-q[.., 8:], q[.., :8]) * sin, the tables frozen [S, D] buffers. One
// weft.rotary; the slices, neg, concat, products and sum die.
// CHECK-LABEL: func.func @rotate_half
// CHECK-NEXT: %[[Y:.*]] = weft.rotary %arg0, %arg1, %arg2 {axis = 3 : i64} : (tensor<2x4x6x16xf32>, tensor<6x16xf32>, tensor<6x16xf32>) -> tensor<2x4x6x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @rotate_half(%q: tensor<2x4x6x16xf32>, %cos: tensor<6x16xf32> {weft.state = "cos", weft.frozen}, %sin: tensor<6x16xf32> {weft.state = "sin", weft.frozen}) -> tensor<2x4x6x16xf32> {
  %qc = weft.mul %q, %cos : (tensor<2x4x6x16xf32>, tensor<6x16xf32>) -> tensor<2x4x6x16xf32>
  %hi = weft.slice %q {starts = array<i64: 0, 0, 0, 8>, ends = array<i64: 2, 4, 6, 16>, steps = array<i64: 1, 1, 1, 1>} : (tensor<2x4x6x16xf32>) -> tensor<2x4x6x8xf32>
  %n = weft.neg %hi : tensor<2x4x6x8xf32>
  %lo = weft.slice %q {starts = array<i64: 0, 0, 0, 0>, ends = array<i64: 2, 4, 6, 8>, steps = array<i64: 1, 1, 1, 1>} : (tensor<2x4x6x16xf32>) -> tensor<2x4x6x8xf32>
  %r = weft.concat %n, %lo {axis = 3 : i64} : (tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>) -> tensor<2x4x6x16xf32>
  %rs = weft.mul %r, %sin : (tensor<2x4x6x16xf32>, tensor<6x16xf32>) -> tensor<2x4x6x16xf32>
  %y = weft.add %qc, %rs : (tensor<2x4x6x16xf32>, tensor<2x4x6x16xf32>) -> tensor<2x4x6x16xf32>
  return %y : tensor<2x4x6x16xf32>
}

// -----

// The sum and the products in the other order.
// CHECK-LABEL: func.func @swapped
// CHECK-NEXT: weft.rotary %arg0, %arg1, %arg2
func.func @swapped(%q: tensor<3x8xf32>, %cos: tensor<3x8xf32>, %sin: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %hi = weft.slice %q {starts = array<i64: 0, 4>, ends = array<i64: 3, 8>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %n = weft.neg %hi : tensor<3x4xf32>
  %lo = weft.slice %q {starts = array<i64: 0, 0>, ends = array<i64: 3, 4>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %r = weft.concat %n, %lo {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %rs = weft.mul %sin, %r : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %qc = weft.mul %cos, %q : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y = weft.add %rs, %qc : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// What must not fuse: tables a parameter reaches (they would need a
// gradient); halves swapped the other way (cat(x[:D/2], -x[D/2:]) is
// rotate's negation, not it); a rotated half of another value than the
// one scaled by cos.
// CHECK-LABEL: func.func @not_rotary
// CHECK-NOT: weft.rotary
func.func @not_rotary(%q: tensor<3x8xf32>, %k: tensor<3x8xf32>, %w: tensor<3x8xf32> {weft.param = "w"}, %sin: tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>) {
  %hi = weft.slice %q {starts = array<i64: 0, 4>, ends = array<i64: 3, 8>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %n = weft.neg %hi : tensor<3x4xf32>
  %lo = weft.slice %q {starts = array<i64: 0, 0>, ends = array<i64: 3, 4>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %r = weft.concat %n, %lo {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %rs = weft.mul %r, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %qc = weft.mul %q, %w : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y0 = weft.add %qc, %rs : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %hi1 = weft.slice %q {starts = array<i64: 0, 4>, ends = array<i64: 3, 8>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %n1 = weft.neg %hi1 : tensor<3x4xf32>
  %lo1 = weft.slice %q {starts = array<i64: 0, 0>, ends = array<i64: 3, 4>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %r1 = weft.concat %lo1, %n1 {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %rs1 = weft.mul %r1, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %qc1 = weft.mul %q, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y1 = weft.add %qc1, %rs1 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %hi2 = weft.slice %k {starts = array<i64: 0, 4>, ends = array<i64: 3, 8>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %n2 = weft.neg %hi2 : tensor<3x4xf32>
  %lo2 = weft.slice %k {starts = array<i64: 0, 0>, ends = array<i64: 3, 4>, steps = array<i64: 1, 1>} : (tensor<3x8xf32>) -> tensor<3x4xf32>
  %r2 = weft.concat %n2, %lo2 {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x8xf32>
  %rs2 = weft.mul %r2, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %qc2 = weft.mul %q, %sin : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  %y2 = weft.add %qc2, %rs2 : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32>
  return %y0, %y1, %y2 : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// GPT-J's rotate_every_two as torch exports it: the odd and even elements
// (step-2 slices), the odd negated, each unsqueezed, stacked along a new
// last dim and flattened. weft.rotary {interleaved}; the chain dies.
// CHECK-LABEL: func.func @rotate_every_two
// CHECK-NEXT: %[[Y:.*]] = weft.rotary %arg0, %arg1, %arg2 {axis = 2 : i64, interleaved = true}
// CHECK-NEXT: return %[[Y]]
func.func @rotate_every_two(%x: tensor<2x3x8xf32>, %c: tensor<3x8xf32>, %s: tensor<3x8xf32>) -> tensor<2x3x8xf32> {
  %0 = weft.slice %x {ends = array<i64: 2, 3, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x4xf32>
  %1 = weft.slice %x {ends = array<i64: 2, 3, 8>, starts = array<i64: 0, 0, 1>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x4xf32>
  %2 = weft.neg %1 : tensor<2x3x4xf32>
  %3 = weft.reshape %2 {shape = array<i64: 2, 3, 4, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %4 = weft.reshape %0 {shape = array<i64: 2, 3, 4, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %5 = weft.concat %3, %4 {axis = 3 : i64} : (tensor<2x3x4x1xf32>, tensor<2x3x4x1xf32>) -> tensor<2x3x4x2xf32>
  %6 = weft.reshape %5 {shape = array<i64: 2, 3, 8>} : (tensor<2x3x4x2xf32>) -> tensor<2x3x8xf32>
  %7 = weft.mul %x, %c : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  %8 = weft.mul %6, %s : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  %9 = weft.add %7, %8 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %9 : tensor<2x3x8xf32>
}

// -----

// The pairs the other way round, (x[2i], -x[2i+1]), are rotate's negation:
// not fused.
// CHECK-LABEL: func.func @pairs_swapped
// CHECK-NOT: weft.rotary
func.func @pairs_swapped(%x: tensor<2x3x8xf32>, %c: tensor<3x8xf32>, %s: tensor<3x8xf32>) -> tensor<2x3x8xf32> {
  %0 = weft.slice %x {ends = array<i64: 2, 3, 8>, starts = array<i64: 0, 0, 0>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x4xf32>
  %1 = weft.slice %x {ends = array<i64: 2, 3, 8>, starts = array<i64: 0, 0, 1>, steps = array<i64: 1, 1, 2>} : (tensor<2x3x8xf32>) -> tensor<2x3x4xf32>
  %2 = weft.neg %1 : tensor<2x3x4xf32>
  %3 = weft.reshape %2 {shape = array<i64: 2, 3, 4, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %4 = weft.reshape %0 {shape = array<i64: 2, 3, 4, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %5 = weft.concat %4, %3 {axis = 3 : i64} : (tensor<2x3x4x1xf32>, tensor<2x3x4x1xf32>) -> tensor<2x3x4x2xf32>
  %6 = weft.reshape %5 {shape = array<i64: 2, 3, 8>} : (tensor<2x3x4x2xf32>) -> tensor<2x3x8xf32>
  %7 = weft.mul %x, %c : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  %8 = weft.mul %6, %s : (tensor<2x3x8xf32>, tensor<3x8xf32>) -> tensor<2x3x8xf32>
  %9 = weft.add %7, %8 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %9 : tensor<2x3x8xf32>
}
