// RUN: weft-opt %s --split-input-file --weft-fold-grad-accumulation | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-fold-grad-accumulation --weft-test-print-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEM

// Three micro-batches' gradients of a Linear layer summed by adds (as
// weft-accumulate-microbatches leaves them): micro-batch 1 accumulates
// into micro-batch 0's gradients, 2 into 1's sums, each at its own
// wgrad_bias's place and task; no add is left.
// CHECK-LABEL: func.func @chain
// CHECK:      %[[W0:.*]], %[[B0:.*]] = weft.wgrad_bias %arg0, %arg1 {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[W1:.*]], %[[B1:.*]] = weft.wgrad_bias %arg2, %arg3 accumulate %[[W0]], %[[B0]] {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<6x4xf32>, tensor<6x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
// CHECK-NEXT: %[[W2:.*]], %[[B2:.*]] = weft.wgrad_bias %arg4, %arg5 accumulate %[[W1]], %[[B1]] {weft.task = #weft.task<B, micro_batch = 2>
// CHECK-NOT:  weft.add
// CHECK:      return %[[W2]], %[[B2]]
// The sums are micro-batch 0's buffers, live to the end; no other
// gradient buffer is made.
// MEM-LABEL: memory @chain: storage 6 activation
// MEM-SAME:  bytes=64 live=[0,2]
// MEM-NEXT:  memory @chain: storage 7 activation
// MEM-SAME:  bytes=64 live=[0,2]
// MEM-NEXT:  memory @chain: arena_bytes=848
func.func @chain(%dy0: tensor<6x4xf32>, %x0: tensor<6x3xf32>,
                 %dy1: tensor<6x4xf32>, %x1: tensor<6x3xf32>,
                 %dy2: tensor<6x4xf32>, %x2: tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
  %w0, %b0 = weft.wgrad_bias %dy0, %x0 {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %w1, %b1 = weft.wgrad_bias %dy1, %x1 {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %w2, %b2 = weft.wgrad_bias %dy2, %x2 {weft.task = #weft.task<B, micro_batch = 2>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %sw1 = weft.add %w0, %w1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %sb1 = weft.add %b0, %b1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %sw2 = weft.add %sw1, %w2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %sb2 = weft.add %b2, %sb1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %sw2, %sb2 : tensor<4x3xf32>, tensor<4xf32>
}

// -----

// A bias kept [1, N] (its gradients read through views): the sum is
// accumulated as [N], the wgrad_bias's own, and seen as [1, N] at the end.
// CHECK-LABEL: func.func @bias_view
// CHECK:      %[[W0:.*]], %[[B0:.*]] = weft.wgrad_bias %arg0, %arg1
// CHECK-NEXT: %[[W1:.*]], %[[B1:.*]] = weft.wgrad_bias %arg2, %arg3 accumulate %[[W0]], %[[B0]] {transposed, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<6x4xbf16>, tensor<6x3xbf16>, tensor<3x4xbf16>, tensor<4xbf16>)
// CHECK-NEXT: %[[V1:.*]] = weft.reshape %[[B1]] {shape = array<i64: 1, 4>, weft.task = #weft.task<F, micro_batch = 1>}
// CHECK-NEXT: return %[[W1]], %[[V1]]
func.func @bias_view(%dy0: tensor<6x4xbf16>, %x0: tensor<6x3xbf16>,
                     %dy1: tensor<6x4xbf16>, %x1: tensor<6x3xbf16>) -> (tensor<3x4xbf16>, tensor<1x4xbf16>) {
  %w0, %b0 = weft.wgrad_bias %dy0, %x0 {transposed} : (tensor<6x4xbf16>, tensor<6x3xbf16>) -> (tensor<3x4xbf16>, tensor<4xbf16>)
  %v0 = weft.reshape %b0 {shape = array<i64: 1, 4>} : (tensor<4xbf16>) -> tensor<1x4xbf16>
  %w1, %b1 = weft.wgrad_bias %dy1, %x1 {transposed, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<6x4xbf16>, tensor<6x3xbf16>) -> (tensor<3x4xbf16>, tensor<4xbf16>)
  %v1 = weft.reshape %b1 {shape = array<i64: 1, 4>} : (tensor<4xbf16>) -> tensor<1x4xbf16>
  %sw = weft.add %w0, %w1 : (tensor<3x4xbf16>, tensor<3x4xbf16>) -> tensor<3x4xbf16>
  %sb = weft.add %v0, %v1 : (tensor<1x4xbf16>, tensor<1x4xbf16>) -> tensor<1x4xbf16>
  return %sw, %sb : tensor<3x4xbf16>, tensor<1x4xbf16>
}

// -----

// GPipe's backward runs the last micro-batch first: the sums accumulate in
// the order the wgrad_bias ops run (2, 1, 0), whatever the adds' order.
// CHECK-LABEL: func.func @reverse_order
// CHECK:      %[[W2:.*]], %[[B2:.*]] = weft.wgrad_bias %arg4, %arg5 {weft.task = #weft.task<F, micro_batch = 2>}
// CHECK-NEXT: %[[W1:.*]], %[[B1:.*]] = weft.wgrad_bias %arg2, %arg3 accumulate %[[W2]], %[[B2]] {weft.task = #weft.task<F, micro_batch = 1>}
// CHECK-NEXT: %[[W0:.*]], %[[B0:.*]] = weft.wgrad_bias %arg0, %arg1 accumulate %[[W1]], %[[B1]] {weft.task = #weft.task<F, micro_batch = 0>}
// CHECK-NOT:  weft.add
// CHECK:      return %[[W0]], %[[B0]]
func.func @reverse_order(%dy0: tensor<6x4xf32>, %x0: tensor<6x3xf32>,
                         %dy1: tensor<6x4xf32>, %x1: tensor<6x3xf32>,
                         %dy2: tensor<6x4xf32>, %x2: tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
  %w2, %b2 = weft.wgrad_bias %dy2, %x2 {weft.task = #weft.task<F, micro_batch = 2>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %w1, %b1 = weft.wgrad_bias %dy1, %x1 {weft.task = #weft.task<F, micro_batch = 1>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %w0, %b0 = weft.wgrad_bias %dy0, %x0 {weft.task = #weft.task<F, micro_batch = 0>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %sw1 = weft.add %w0, %w1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %sb1 = weft.add %b0, %b1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %sw2 = weft.add %sw1, %w2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %sb2 = weft.add %sb1, %b2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %sw2, %sb2 : tensor<4x3xf32>, tensor<4xf32>
}

// -----

// Refused: a sum something else reads (returned), a sum with an
// argument or another op's result in it, a bias gradient no add reads.
// Each keeps its adds.
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-5: weft.wgrad_bias %arg0, %arg1 :
// CHECK-NOT:  weft.wgrad_bias
// CHECK:      return
func.func @refused(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>,
                   %w: tensor<4x3xf32>, %b: tensor<4xf32>) -> (tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xf32>) {
  // Read elsewhere.
  %w0, %b0 = weft.wgrad_bias %dy, %x : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %w1, %b1 = weft.wgrad_bias %dy, %x : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %s1 = weft.add %w0, %w1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %t1 = weft.add %b0, %b1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // An argument's bytes.
  %w2, %b2 = weft.wgrad_bias %dy, %x : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %s2 = weft.add %w, %w2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %t2 = weft.add %b, %b2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // Made after.
  %w3, %b3 = weft.wgrad_bias %dy, %x : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %late = weft.neg %w : tensor<4x3xf32>
  %late_b = weft.neg %b : tensor<4xf32>
  %s3 = weft.add %late, %w3 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %t3 = weft.add %late_b, %b3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // The bias gradient not summed.
  %e0 = weft.neg %w : tensor<4x3xf32>
  %w4, %b4 = weft.wgrad_bias %dy, %x : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %s4 = weft.add %e0, %w4 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %s1, %t1, %s2, %t2, %w0, %b4, %s3, %s4, %t3 : tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4xf32>
}

// -----

// Refused: the sums on another pipeline stage.
// CHECK-LABEL: func.func @other_stage
// CHECK-COUNT-2: weft.wgrad_bias %arg0, %arg1 {weft.task = #weft.task<F, stage =
// CHECK:      weft.add
func.func @other_stage(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
  %w0, %b0 = weft.wgrad_bias %dy, %x {weft.task = #weft.task<F, stage = 0>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %w1, %b1 = weft.wgrad_bias %dy, %x {weft.task = #weft.task<F, stage = 1>} : (tensor<6x4xf32>, tensor<6x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  %s = weft.add %w0, %w1 {weft.task = #weft.task<F, stage = 1>} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %t = weft.add %b0, %b1 {weft.task = #weft.task<F, stage = 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %s, %t : tensor<4x3xf32>, tensor<4xf32>
}
