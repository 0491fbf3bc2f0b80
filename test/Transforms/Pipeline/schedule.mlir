// RUN: weft-opt %s --weft-autodiff --weft-accumulate-microbatches=microbatches=8 --weft-append-optimizer=optimizer=sgd --weft-insert-send-recv --weft-schedule=schedule=gpipe --weft-simulate-pipeline | FileCheck %s --check-prefix=GPIPE
// RUN: weft-opt %s --weft-autodiff --weft-accumulate-microbatches=microbatches=8 --weft-append-optimizer=optimizer=sgd --weft-insert-send-recv --weft-schedule=schedule=1f1b --weft-simulate-pipeline | FileCheck %s --check-prefix=ONEF
// RUN: weft-opt %s --weft-autodiff --weft-accumulate-microbatches=microbatches=8 --weft-append-optimizer=optimizer=sgd --weft-insert-send-recv --weft-schedule=schedule=1f1b | FileCheck %s --check-prefix=XFER

// Four stages of one matmul + relu each, 8 micro-batches. Stage 1's task
// order, read off its relu (forward) and relu_grad (backward) ops.
//
// GPipe (torchgpipe Algorithm 1): F0..F7, then B7..B0.
// GPIPE-LABEL: func.func @stage1
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 0, stage = 1>}
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 1, stage = 1>}
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 2, stage = 1>}
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 3, stage = 1>}
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 4, stage = 1>}
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 5, stage = 1>}
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 6, stage = 1>}
// GPIPE: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 7, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 7, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 6, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 5, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 4, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 3, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 2, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 1, stage = 1>}
// GPIPE: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 0, stage = 1>}
// GPIPE-LABEL: func.func @stage2
//
// 1F1B on stage 1 of 4: P - s - 1 = 2 warm-up forwards, then one forward one
// backward, then the cool-down backwards.
// ONEF-LABEL: func.func @stage1
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 0, stage = 1>}
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 1, stage = 1>}
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 2, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 0, stage = 1>}
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 3, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 1, stage = 1>}
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 4, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 2, stage = 1>}
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 5, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 3, stage = 1>}
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 6, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 4, stage = 1>}
// ONEF: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 7, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 5, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 6, stage = 1>}
// ONEF: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 7, stage = 1>}
// ONEF-LABEL: func.func @stage2
//
// Transfers overlap compute: the receive of F3's input from stage 0 is
// posted at the start of the task before it (B0). The send of F2's output is
// waited for at the end of B2: B2 needs the gradient of what was sent, so
// stage 2 has received it by then.
// XFER-LABEL: func.func @stage1
// XFER: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 2, stage = 1>}
// XFER: %[[SEND:.*]] = weft.isend {{.*}}micro_batch = 2
// XFER-NOT: weft.relu_grad
// XFER: weft.irecv {peer = 0 : i64, tag = {{[0-9]+}} : i64, weft.task = #weft.task<F, micro_batch = 3, stage = 1>}
// XFER: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 0
// XFER-NOT: weft.wait_send %[[SEND]]
// XFER: weft.relu_grad %{{.*}} {weft.task = #weft.task<B, micro_batch = 2
// XFER-NOT: weft.relu
// XFER: weft.wait_send %[[SEND]]
// XFER: weft.relu %{{.*}} {weft.task = #weft.task<F, micro_batch = 5
func.func @main(%x: tensor<16x32xf32> {weft.input = "x"},
                %w0: tensor<32x32xf32> {weft.param = "w0"}, %w1: tensor<32x32xf32> {weft.param = "w1"},
                %w2: tensor<32x32xf32> {weft.param = "w2"}, %w3: tensor<32x32xf32> {weft.param = "w3"})
    -> (tensor<f32> {weft.output = "loss"}) attributes {weft.pipeline_stages = 4 : i64} {
  %0 = weft.matmul %x, %w0 {weft.task = #weft.task<F, stage = 0>} : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %1 = weft.relu %0 {weft.task = #weft.task<F, stage = 0>} : tensor<16x32xf32>
  %2 = weft.matmul %1, %w1 {weft.task = #weft.task<F, stage = 1>} : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %3 = weft.relu %2 {weft.task = #weft.task<F, stage = 1>} : tensor<16x32xf32>
  %4 = weft.matmul %3, %w2 {weft.task = #weft.task<F, stage = 2>} : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %5 = weft.relu %4 {weft.task = #weft.task<F, stage = 2>} : tensor<16x32xf32>
  %6 = weft.matmul %5, %w3 {weft.task = #weft.task<F, stage = 3>} : (tensor<16x32xf32>, tensor<32x32xf32>) -> tensor<16x32xf32>
  %7 = weft.relu %6 {weft.task = #weft.task<F, stage = 3>} : tensor<16x32xf32>
  %8 = weft.reduce_mean %7 {axes = array<i64: 0, 1>, keepdims = false, weft.task = #weft.task<F, stage = 3>} : (tensor<16x32xf32>) -> tensor<f32>
  return %8 : tensor<f32>
}
