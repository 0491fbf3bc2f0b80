// RUN: weft-opt %s --split-input-file --weft-fold-gather-grad-add | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-fold-gather-grad-add --weft-test-print-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEM

// A tied LM head (GPT-2): the head's weight gradient is computed first,
// the embedding's gradient last, and an add sums them. The embedding's
// rows are scattered into the head's gradient, in place, where the
// gather_grad was; no add is left.
// CHECK-LABEL: func.func @tied
// CHECK:      %[[HEAD:.*]] = weft.gemm %arg0, %arg1 {transA = true}
// CHECK-NEXT: %[[X:.*]] = weft.exp %arg2
// CHECK-NEXT: %[[SUM:.*]] = weft.gather_grad %[[X]], %arg3 accumulate %[[HEAD]] {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<B>} : (tensor<2x3x4xf32>, tensor<2x3xi64>, tensor<5x4xf32>) -> tensor<5x4xf32>
// CHECK-NOT:  weft.add
// CHECK:      return %[[SUM]]
// The table is the head gradient's buffer (storage 4): the exp's is the
// only other activation, no [5, 4] table of the gather_grad's own.
// MEM-LABEL: memory @tied: storage 4 activation
// MEM-SAME:  bytes=128 live=[0,2]
// MEM-NEXT:  memory @tied: storage 5 activation
// MEM-SAME:  bytes=128 live=[1,2]
// MEM-NEXT:  memory @tied: arena_bytes=
func.func @tied(%dlogits: tensor<6x5xf32>, %h: tensor<6x4xf32>, %dx: tensor<2x3x4xf32>, %tokens: tensor<2x3xi64>) -> tensor<5x4xf32> {
  %head = weft.gemm %dlogits, %h {transA = true} : (tensor<6x5xf32>, tensor<6x4xf32>) -> tensor<5x4xf32>
  %x = weft.exp %dx : tensor<2x3x4xf32>
  %table = weft.gather_grad %x, %tokens {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<B>} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<5x4xf32>
  %sum = weft.add %table, %head : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  return %sum : tensor<5x4xf32>
}

// -----

// The other gradient computed after the gather_grad (a pipeline's head
// gradient received from the last stage): the fused op takes the add's
// place.
// CHECK-LABEL: func.func @other_later
// CHECK:      %[[X:.*]] = weft.exp %arg2
// CHECK-NEXT: %[[HEAD:.*]] = weft.gemm %arg0, %arg1 {transA = true}
// CHECK-NEXT: %[[SUM:.*]] = weft.gather_grad %[[X]], %arg3 accumulate %[[HEAD]]
// CHECK-NEXT: return %[[SUM]]
func.func @other_later(%dlogits: tensor<6x5xbf16>, %h: tensor<6x4xbf16>, %dx: tensor<6x4xbf16>, %tokens: tensor<6xi32>) -> tensor<5x4xbf16> {
  %x = weft.exp %dx : tensor<6x4xbf16>
  %table = weft.gather_grad %x, %tokens {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<6x4xbf16>, tensor<6xi32>) -> tensor<5x4xbf16>
  %head = weft.gemm %dlogits, %h {transA = true} : (tensor<6x5xbf16>, tensor<6x4xbf16>) -> tensor<5x4xbf16>
  %sum = weft.add %head, %table : (tensor<5x4xbf16>, tensor<5x4xbf16>) -> tensor<5x4xbf16>
  return %sum : tensor<5x4xbf16>
}

// -----

// A position embedding's gradient summed over three micro-batches: each
// later gather_grad scatters into the sum so far, link by link, where it
// was. The first keeps its table; a view of it is written through.
// CHECK-LABEL: func.func @chain
// CHECK:      %[[G0:.*]] = weft.gather_grad %arg0, %arg3 {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<F, micro_batch = 0>}
// CHECK-NEXT: %[[V0:.*]] = weft.reshape %[[G0]]
// CHECK-NEXT: %[[V1:.*]] = weft.reshape %[[V0]]
// CHECK-NEXT: %[[G1:.*]] = weft.gather_grad %arg1, %arg3 accumulate %[[V1]] {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<F, micro_batch = 1>}
// CHECK-NEXT: %[[G2:.*]] = weft.gather_grad %arg2, %arg3 accumulate %[[G1]] {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<F, micro_batch = 2>}
// CHECK-NEXT: return %[[G2]]
// One table for the three micro-batches' sums.
// MEM-LABEL: memory @chain: storage 4 activation
// MEM-SAME:  bytes=128 live=[0,4]
// MEM-NEXT:  memory @chain: arena_bytes=
func.func @chain(%dy0: tensor<3x4xf32>, %dy1: tensor<3x4xf32>, %dy2: tensor<3x4xf32>, %positions: tensor<3xi64>) -> tensor<5x4xf32> {
  %g0 = weft.gather_grad %dy0, %positions {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<F, micro_batch = 0>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %v0 = weft.reshape %g0 {shape = array<i64: 20>} : (tensor<5x4xf32>) -> tensor<20xf32>
  %v1 = weft.reshape %v0 {shape = array<i64: 5, 4>} : (tensor<20xf32>) -> tensor<5x4xf32>
  %g1 = weft.gather_grad %dy1, %positions {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %g2 = weft.gather_grad %dy2, %positions {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<F, micro_batch = 2>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %s1 = weft.add %v1, %g1 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %s2 = weft.add %s1, %g2 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  return %s2 : tensor<5x4xf32>
}

// -----

// Left alone: the other gradient is an argument (or a view of one), or is
// read again; the table is read again; the add broadcasts; the two are on
// different pipeline stages; the other is a constant (every step's).
// CHECK-LABEL: func.func @refused
// CHECK-COUNT-7: weft.add
// CHECK-NOT:  accumulate
func.func @refused(%dy: tensor<3x4xf32>, %i: tensor<3xi64>, %arg: tensor<5x4xf32>, %flat: tensor<20xf32>, %row: tensor<1x4xf32>) -> (tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>) {
  %g0 = weft.gather_grad %dy, %i {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %s0 = weft.add %arg, %g0 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %g1 = weft.gather_grad %dy, %i {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %view = weft.reshape %flat {shape = array<i64: 5, 4>} : (tensor<20xf32>) -> tensor<5x4xf32>
  %s1 = weft.add %view, %g1 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %g2 = weft.gather_grad %dy, %i {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %twice = weft.exp %arg : tensor<5x4xf32>
  %s2 = weft.add %twice, %g2 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %g3 = weft.gather_grad %dy, %i {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %other = weft.exp %arg : tensor<5x4xf32>
  %s3 = weft.add %other, %g3 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %g4 = weft.gather_grad %dy, %i {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %s4 = weft.add %row, %g4 : (tensor<1x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %g5 = weft.gather_grad %dy, %i {axis = 0 : i64, shape = array<i64: 5, 4>, weft.task = #weft.task<F, stage = 0>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %late = weft.exp %arg {weft.task = #weft.task<F, stage = 1>} : tensor<5x4xf32>
  %s5 = weft.add %late, %g5 {weft.task = #weft.task<F, stage = 1>} : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %g6 = weft.gather_grad %dy, %i {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<5x4xf32>
  %zeros = weft.constant dense<0.0> : tensor<5x4xf32>
  %s6 = weft.add %zeros, %g6 : (tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  return %s0, %s1, %s2, %twice, %s3, %g3, %s4, %s5, %s6 : tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>
}

// -----

// Tensor parallelism: a vocabulary-parallel table's shard of the gradient
// scatters into the tied head's shard alike.
// CHECK-LABEL: func.func @vocab_parallel
// CHECK:      %[[HEAD:.*]] = weft.gemm %arg0, %arg1 {transA = true}
// CHECK-NEXT: %[[SUM:.*]] = weft.vocab_parallel_gather_grad %arg2, %arg3 accumulate %[[HEAD]] {grid = @mesh, grid_axes = array<i16: 0>} : (tensor<6x4xf32>, tensor<6xi64>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT: return %[[SUM]]
shard.grid @mesh(shape = 2)
func.func @vocab_parallel(%dlogits: tensor<6x3xf32>, %h: tensor<6x4xf32>, %dx: tensor<6x4xf32>, %tokens: tensor<6xi64>) -> tensor<3x4xf32> {
  %head = weft.gemm %dlogits, %h {transA = true} : (tensor<6x3xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
  %table = weft.vocab_parallel_gather_grad %dx, %tokens {grid = @mesh, grid_axes = array<i16: 0>} : (tensor<6x4xf32>, tensor<6xi64>) -> tensor<3x4xf32>
  %sum = weft.add %head, %table : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %sum : tensor<3x4xf32>
}
