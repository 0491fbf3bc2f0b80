// RUN: weft-opt %s --split-input-file --weft-fold-loss-grad | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-fold-loss-grad --weft-test-print-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=MEM

// A language model's head: the logits [B S, V] seen as [B, S, V] and back,
// the loss, its seed (a backward constant), its gradient, the head's
// weight gradient. One softmax_cross_entropy_and_grad at the loss's place,
// the seed moved before it as a forward op; the gradient's readers read its
// third result.
// CHECK-LABEL: func.func @head
// CHECK: %[[LOGITS:.*]] = weft.reshape %{{.*}} {shape = array<i64: 4, 16>
// CHECK-NEXT: %[[SEED:.*]] = weft.constant {weft.task = #weft.task<F, micro_batch = 1>} dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[L:.*]], %{{.*}}, %[[G:.*]] = weft.softmax_cross_entropy_and_grad %[[LOGITS]], %arg2, %[[SEED]] {ignore_index = -100 : i64, log_prob_type = f32, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<4x16xbf16>, tensor<4xi64>, tensor<f32>) -> (tensor<f32>, tensor<4xf32>, tensor<4x16xbf16>)
// CHECK-NOT: weft.softmax_cross_entropy
// CHECK: weft.gemm %[[G]], %arg0 {{.*}}transA = true
// CHECK: return %[[L]]
// The gradient is written over the logits: one storage, live from the
// logits' gemm (step 0) to the weight gradient (step 5); then the seed, the
// loss, the log-sum-exp and the weight gradient, and no other.
// MEM-LABEL: memory @head: storage 3 activation
// MEM-SAME: bytes=128 live=[0,5]
// MEM-NEXT: memory @head: storage 4 constant
// MEM-NEXT: memory @head: storage 5 activation
// MEM-SAME: live=[4,5]
// MEM-NEXT: memory @head: storage 6 activation
// MEM-SAME: live=[4,4]
// MEM-NEXT: memory @head: storage 7 activation
// MEM-SAME: bytes=256 live=[5,5]
// MEM-NEXT: memory @head: arena_bytes
func.func @head(%h: tensor<4x8xbf16> {weft.input = "h"},
                %w: tensor<16x8xbf16> {weft.param = "w"},
                %t: tensor<4xi64> {weft.input = "t"}) -> (tensor<f32>, tensor<16x8xbf16>) {
  %z = weft.gemm %h, %w {transB = true, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<4x8xbf16>, tensor<16x8xbf16>) -> tensor<4x16xbf16>
  %z3 = weft.reshape %z {shape = array<i64: 1, 4, 16>, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<4x16xbf16>) -> tensor<1x4x16xbf16>
  %s = weft.reshape %z3 {shape = array<i64: 4, 16>, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<1x4x16xbf16>) -> tensor<4x16xbf16>
  %l, %lse = weft.softmax_cross_entropy %s, %t {ignore_index = -100 : i64, log_prob_type = f32, log_sum_exp, weft.task = #weft.task<F, micro_batch = 1>} : (tensor<4x16xbf16>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  %one = weft.constant {weft.task = #weft.task<B, micro_batch = 1>} dense<1.0> : tensor<f32>
  %g = weft.softmax_cross_entropy_grad %s, %t, %one log_sum_exp %lse {ignore_index = -100 : i64, weft.task = #weft.task<B, micro_batch = 1>} : (tensor<4x16xbf16>, tensor<4xi64>, tensor<f32>, tensor<4xf32>) -> tensor<4x16xbf16>
  %dw = weft.gemm %g, %h {beta = 0.0 : f64, transA = true, weft.task = #weft.task<B, micro_batch = 1>} : (tensor<4x16xbf16>, tensor<4x8xbf16>) -> tensor<16x8xbf16>
  return %l, %dw : tensor<f32>, tensor<16x8xbf16>
}

// -----

// f16's seed: the loss scale sliced from its state and reshaped, in the
// backward; both ops move before the loss, as forward ops. Class weights
// and "sum" carry over.
// CHECK-LABEL: func.func @scaled
// CHECK: %[[S:.*]] = weft.slice %arg3
// CHECK-NOT: weft.task
// CHECK-NEXT: %[[R:.*]] = weft.reshape %[[S]] {shape = array<i64>}
// CHECK-NEXT: weft.softmax_cross_entropy_and_grad %{{.*}}, %arg1, %[[R]], %arg2 {reduction = "sum"}
func.func @scaled(%x: tensor<4x16xf32> {weft.input = "x"},
                  %t: tensor<4xi64> {weft.input = "t"},
                  %c: tensor<16xf32> {weft.input = "c"},
                  %state: tensor<3xf32> {weft.state = "loss_scale"}) -> (tensor<f32>, tensor<4x16xf32>) {
  %s = weft.exp %x : tensor<4x16xf32>
  %l, %lse = weft.softmax_cross_entropy %s, %t, %c {log_sum_exp, reduction = "sum"} : (tensor<4x16xf32>, tensor<4xi64>, tensor<16xf32>) -> (tensor<f32>, tensor<4xf32>)
  %scale = weft.slice %state {ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>, weft.task = #weft.task<B>} : (tensor<3xf32>) -> tensor<1xf32>
  %seed = weft.reshape %scale {shape = array<i64>, weft.task = #weft.task<B>} : (tensor<1xf32>) -> tensor<f32>
  %g = weft.softmax_cross_entropy_grad %s, %t, %seed, %c log_sum_exp %lse {reduction = "sum", weft.task = #weft.task<B>} : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>, tensor<16xf32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %l, %g : tensor<f32>, tensor<4x16xf32>
}

// -----

// Left alone: scores something else reads (through a view); scores that
// are a parameter's bytes; a gradient of another micro-batch; a seed made
// from the loss itself, which the forward would have to read before it
// runs.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: softmax_cross_entropy_and_grad
// CHECK: return
func.func @kept(%x: tensor<4x16xf32> {weft.input = "x"},
                %p: tensor<4x16xf32> {weft.param = "p"},
                %t: tensor<4xi64> {weft.input = "t"}) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<1x64xf32>) {
  %one = weft.constant dense<1.0> : tensor<f32>
  %s = weft.exp %x : tensor<4x16xf32>
  %l, %lse = weft.softmax_cross_entropy %s, %t {log_sum_exp} : (tensor<4x16xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  %g = weft.softmax_cross_entropy_grad %s, %t, %one log_sum_exp %lse {weft.task = #weft.task<B>} : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>, tensor<4xf32>) -> tensor<4x16xf32>
  %v = weft.reshape %s {shape = array<i64: 1, 64>} : (tensor<4x16xf32>) -> tensor<1x64xf32>
  %l2, %lse2 = weft.softmax_cross_entropy %p, %t {log_sum_exp} : (tensor<4x16xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  %g2 = weft.softmax_cross_entropy_grad %p, %t, %one log_sum_exp %lse2 {weft.task = #weft.task<B>} : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>, tensor<4xf32>) -> tensor<4x16xf32>
  %s3 = weft.exp %p : tensor<4x16xf32>
  %l3, %lse3 = weft.softmax_cross_entropy %s3, %t {log_sum_exp, weft.task = #weft.task<F, micro_batch = 0>} : (tensor<4x16xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  %g3 = weft.softmax_cross_entropy_grad %s3, %t, %one log_sum_exp %lse3 {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>, tensor<4xf32>) -> tensor<4x16xf32>
  %s4 = weft.log %p : tensor<4x16xf32>
  %l4, %lse4 = weft.softmax_cross_entropy %s4, %t {log_sum_exp} : (tensor<4x16xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  %seed4 = weft.mul %l4, %one {weft.task = #weft.task<B>} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %g4 = weft.softmax_cross_entropy_grad %s4, %t, %seed4 log_sum_exp %lse4 {weft.task = #weft.task<B>} : (tensor<4x16xf32>, tensor<4xi64>, tensor<f32>, tensor<4xf32>) -> tensor<4x16xf32>
  return %g, %g2, %g3, %g4, %v : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<1x64xf32>
}
