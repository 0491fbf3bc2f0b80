// RUN: weft-opt %s --weft-accumulate-microbatches=microbatches=3 | FileCheck %s

// A micro-batch sum adds into its running sum's bytes (weft.accumulate, an
// in-place add: inPlaceOperand) where nothing else reads the running sum,
// so the sum is one buffer for every micro-batch, as the plan's task
// bodies need. %b's first share is read by nothing else: all its adds
// accumulate. %a's first share is also read by relu (%b): its first add
// writes bytes of its own, the next accumulates into them.
// CHECK-LABEL: func.func @sums
// CHECK: %[[A0:.*]] = weft.matmul {{.*}}micro_batch = 0
// CHECK: %[[B0:.*]] = weft.relu %[[A0]]
// CHECK: %[[A1:.*]] = weft.matmul {{.*}}micro_batch = 1
// CHECK: %[[B1:.*]] = weft.relu %[[A1]]
// CHECK: %[[SB1:.*]] = weft.add %[[B0]], %[[B1]] {weft.accumulate}
// CHECK: %[[SA1:.*]] = weft.add %[[A0]], %[[A1]] :
// CHECK: %[[A2:.*]] = weft.matmul {{.*}}micro_batch = 2
// CHECK: %[[B2:.*]] = weft.relu %[[A2]]
// CHECK: weft.add %[[SB1]], %[[B2]] {weft.accumulate}
// CHECK: weft.add %[[SA1]], %[[A2]] {weft.accumulate}
func.func @sums(%x: tensor<2x4xf32> {weft.input = "x"},
                %w: tensor<4x4xf32> {weft.param = "w"})
    -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = weft.matmul %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %b = weft.relu %a : tensor<2x4xf32>
  return %b, %a : tensor<2x4xf32>, tensor<2x4xf32>
}
