// RUN: weft-opt %s --split-input-file --weft-insert-send-recv | FileCheck %s

// A U-Net skip: %enc is produced on stage 0 and used on stages 1 and 3. It
// goes directly to stage 3 (torchgpipe's portals), not through stage 2;
// stage 1 gets its own transfer. Each transfer is an isend right after the
// producer, an irecv + wait_recv right before the first user, and a
// wait_send at the end of the step.
// CHECK-LABEL: func.func @skip
// CHECK: %[[ENC:.*]] = weft.relu %arg0 {weft.task = #weft.task<F, stage = 0>}
// CHECK-NEXT: %[[S1:.*]] = weft.isend %[[ENC]] {peer = 1 : i64, tag = 0 : i64, weft.task = #weft.task<F, stage = 0>}
// CHECK-NEXT: %[[S3:.*]] = weft.isend %[[ENC]] {peer = 3 : i64, tag = 1 : i64, weft.task = #weft.task<F, stage = 0>}
// CHECK: %[[B1:.*]], %[[R1:.*]] = weft.irecv {peer = 0 : i64, tag = 0 : i64, weft.task = #weft.task<F, stage = 1>}
// CHECK-NEXT: %[[E1:.*]] = weft.wait_recv %[[R1]], %[[B1]] {weft.task = #weft.task<F, stage = 1>}
// CHECK-NEXT: %[[MID:.*]] = weft.exp %[[E1]] {weft.task = #weft.task<F, stage = 1>}
// CHECK: weft.isend %[[MID]] {peer = 2 : i64, tag = 2 : i64, weft.task = #weft.task<F, stage = 1>}
// CHECK: weft.irecv {peer = 1 : i64, tag = 2 : i64, weft.task = #weft.task<F, stage = 2>}
// CHECK-NOT: peer = 2 : i64, tag = 1
// CHECK: %[[B3:.*]], %[[R3:.*]] = weft.irecv {peer = 0 : i64, tag = 1 : i64, weft.task = #weft.task<F, stage = 3>}
// CHECK-NEXT: %[[E3:.*]] = weft.wait_recv %[[R3]], %[[B3]] {weft.task = #weft.task<F, stage = 3>}
// CHECK: weft.add %{{.*}}, %[[E3]] {weft.task = #weft.task<F, stage = 3>}
// CHECK-DAG: weft.wait_send %[[S1]], %[[ENC]] {weft.task = #weft.task<F, stage = 0>}
// CHECK-DAG: weft.wait_send %[[S3]], %[[ENC]] {weft.task = #weft.task<F, stage = 0>}
// CHECK: return
func.func @skip(%x: tensor<4xf32> {weft.input = "x"}) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 4 : i64} {
  %enc = weft.relu %x {weft.task = #weft.task<F, stage = 0>} : tensor<4xf32>
  %mid = weft.exp %enc {weft.task = #weft.task<F, stage = 1>} : tensor<4xf32>
  %dec = weft.neg %mid {weft.task = #weft.task<F, stage = 2>} : tensor<4xf32>
  %out = weft.add %dec, %enc {weft.task = #weft.task<F, stage = 3>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %out : tensor<4xf32>
}

// -----

// Unstaged ops: a micro-batch slice of an input goes to its user's stage;
// a sum of staged values (and the update using it) to the latest operand's
// stage. A parameter used on stages 0 and 1 (a tied embedding) keeps one
// update per holder: the update on stage 1, where the summed gradient is, is
// cloned onto stage 0, which receives the gradient and returns its own
// updated copy.
// CHECK-LABEL: func.func @tied
// CHECK-SAME: -> (tensor<4xf32> {weft.update = "w"}, tensor<4xf32> {weft.update = "w"})
// CHECK: weft.slice %arg0 {{.*}}stage = 0
// CHECK: %[[G:.*]] = weft.add {{.*}}stage = 1
// CHECK: weft.isend %[[G]] {peer = 0 : i64
// CHECK: %[[U1:.*]]:2 = weft.sgd %arg1, %[[G]], %arg2 {{.*}}stage = 1
// CHECK: %[[GB:.*]], %[[GR:.*]] = weft.irecv {peer = 1 : i64, {{.*}}stage = 0>}
// CHECK: %[[G0:.*]] = weft.wait_recv %[[GR]], %[[GB]]
// CHECK: %[[U0:.*]]:2 = weft.sgd %arg1, %[[G0]], %arg2 {{.*}}stage = 0
// CHECK: return %[[U1]]#0, %[[U0]]#0
func.func @tied(%x: tensor<8xf32> {weft.input = "x"}, %w: tensor<4xf32> {weft.param = "w"},
                %m: tensor<4xf32> {weft.optimizer_state = "w.momentum_buffer"})
    -> (tensor<4xf32> {weft.update = "w"})
    attributes {weft.pipeline_stages = 2 : i64} {
  %xs = weft.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 1>} : (tensor<8xf32>) -> tensor<4xf32>
  %a = weft.mul %xs, %w {weft.task = #weft.task<F, stage = 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b = weft.mul %a, %w {weft.task = #weft.task<F, stage = 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g = weft.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u:2 = weft.sgd %w, %g, %m {lr = 0.1 : f64, momentum = 0.9 : f64, nesterov = false, weft.task = #weft.task<U>, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %u#0 : tensor<4xf32>
}

// -----

// A forward value the next stage reads first in the backward (selective
// recompute's recomputation): received in the producer's task, when it is
// sent (the pair posts its transfers in one order at both ends), waited
// for at its reader.
// CHECK-LABEL: func.func @read_in_backward
// CHECK: %[[A:.*]] = weft.relu %arg0 {weft.task = #weft.task<F, micro_batch = 1, stage = 0>}
// CHECK-NEXT: weft.isend %[[A]] {peer = 1 : i64, tag = 0 : i64, weft.task = #weft.task<F, micro_batch = 1, stage = 0>}
// CHECK-NEXT: %[[B:.*]], %[[R:.*]] = weft.irecv {peer = 0 : i64, tag = 0 : i64, weft.task = #weft.task<F, micro_batch = 1, stage = 1>}
// CHECK: %[[V:.*]] = weft.wait_recv %[[R]], %[[B]] {weft.task = #weft.task<B, micro_batch = 1, stage = 1>}
// CHECK-NEXT: weft.exp %[[V]] {weft.task = #weft.task<B, micro_batch = 1, stage = 1>}
func.func @read_in_backward(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 2 : i64} {
  %a = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1, stage = 0>} : tensor<4xf32>
  %b = weft.neg %x {weft.task = #weft.task<F, micro_batch = 1, stage = 1>} : tensor<4xf32>
  %c = weft.exp %a {weft.task = #weft.task<B, micro_batch = 1, stage = 1>} : tensor<4xf32>
  %d = weft.add %b, %c {weft.task = #weft.task<B, micro_batch = 1, stage = 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %d : tensor<4xf32>
}
