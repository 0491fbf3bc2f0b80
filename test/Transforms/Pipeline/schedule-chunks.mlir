// RUN: weft-opt %s --weft-schedule=schedule=zb-v | FileCheck %s

// Model chunks: weft-partition-pipeline placed 4 stages on 2 ranks in a V
// (weft.stage_ranks: rank 0 runs stages 0 and 3, rank 1 stages 1 and 2).
// weft-schedule writes one function per rank, its ops in the rank's ZB-V
// order (weft-test-print-task-orders "schedule=zb-v ranks=2
// microbatches=2", rank 0: F0.0 F0.1 F1.0 B1.0 W1.0 F1.1 B1.1 W1.1 B0.0
// W0.0 B0.1 W0.1), each op tagged with its chunk.

// CHECK-LABEL: func.func @stage0
// CHECK-SAME: weft.chunk_stages = array<i64: 0, 3>
// CHECK-SAME: weft.schedule = "zb-v"
// CHECK-NEXT: weft.relu {{.*}} #weft.task<F, micro_batch = 0, stage = 0>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<F, micro_batch = 1, stage = 0>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<F, micro_batch = 0, stage = 3, chunk = 1>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<B, micro_batch = 0, stage = 3, chunk = 1>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<W, micro_batch = 0, stage = 3, chunk = 1>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<F, micro_batch = 1, stage = 3, chunk = 1>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<B, micro_batch = 1, stage = 3, chunk = 1>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<W, micro_batch = 1, stage = 3, chunk = 1>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<B, micro_batch = 0, stage = 0>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<W, micro_batch = 0, stage = 0>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<B, micro_batch = 1, stage = 0>
// CHECK-NEXT: weft.relu {{.*}} #weft.task<W, micro_batch = 1, stage = 0>
// CHECK-LABEL: func.func @stage1
// CHECK-SAME: weft.chunk_stages = array<i64: 1, 2>
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 4 : i64,
                weft.stage_ranks = array<i64: 0, 1, 1, 0>} {
  %f00 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 0>} : tensor<4xf32>
  %f01 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1, stage = 0>} : tensor<4xf32>
  %f10 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 1>} : tensor<4xf32>
  %f11 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1, stage = 1>} : tensor<4xf32>
  %f20 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 2>} : tensor<4xf32>
  %f21 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1, stage = 2>} : tensor<4xf32>
  %f30 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 3>} : tensor<4xf32>
  %f31 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1, stage = 3>} : tensor<4xf32>
  %b30 = weft.relu %f30 {weft.task = #weft.task<B, micro_batch = 0, stage = 3>} : tensor<4xf32>
  %w30 = weft.relu %b30 {weft.task = #weft.task<W, micro_batch = 0, stage = 3>} : tensor<4xf32>
  %b31 = weft.relu %f31 {weft.task = #weft.task<B, micro_batch = 1, stage = 3>} : tensor<4xf32>
  %w31 = weft.relu %b31 {weft.task = #weft.task<W, micro_batch = 1, stage = 3>} : tensor<4xf32>
  %b20 = weft.relu %f20 {weft.task = #weft.task<B, micro_batch = 0, stage = 2>} : tensor<4xf32>
  %w20 = weft.relu %b20 {weft.task = #weft.task<W, micro_batch = 0, stage = 2>} : tensor<4xf32>
  %b21 = weft.relu %f21 {weft.task = #weft.task<B, micro_batch = 1, stage = 2>} : tensor<4xf32>
  %w21 = weft.relu %b21 {weft.task = #weft.task<W, micro_batch = 1, stage = 2>} : tensor<4xf32>
  %b10 = weft.relu %f10 {weft.task = #weft.task<B, micro_batch = 0, stage = 1>} : tensor<4xf32>
  %w10 = weft.relu %b10 {weft.task = #weft.task<W, micro_batch = 0, stage = 1>} : tensor<4xf32>
  %b11 = weft.relu %f11 {weft.task = #weft.task<B, micro_batch = 1, stage = 1>} : tensor<4xf32>
  %w11 = weft.relu %b11 {weft.task = #weft.task<W, micro_batch = 1, stage = 1>} : tensor<4xf32>
  %b00 = weft.relu %f00 {weft.task = #weft.task<B, micro_batch = 0, stage = 0>} : tensor<4xf32>
  %w00 = weft.relu %b00 {weft.task = #weft.task<W, micro_batch = 0, stage = 0>} : tensor<4xf32>
  %b01 = weft.relu %f01 {weft.task = #weft.task<B, micro_batch = 1, stage = 0>} : tensor<4xf32>
  %w01 = weft.relu %b01 {weft.task = #weft.task<W, micro_batch = 1, stage = 0>} : tensor<4xf32>
  return %w01 : tensor<4xf32>
}

