// RUN: weft-opt %s --weft-autodiff --weft-checkpoint="policy=full granularity=layer" | FileCheck %s

// Two residual blocks y = x + relu(x w0), z = y + relu(y w1). Inside a
// block two values are live (the residual stream and the branch); after
// each residual add only one: those are the layer cuts. Each block is
// recomputed from its input right before its own backward, block 2 first,
// so only one block's activations are rematerialized at a time. Only what
// the backward reads is recomputed (relu_grad reads the matmul result, not
// the relu's); y, the second block's input, is kept and never recomputed.
// CHECK-LABEL: func.func @residual
// CHECK: %[[H0:.*]] = weft.matmul %arg0, %arg1 :
// CHECK: %[[Y:.*]] = weft.add %arg0,
// CHECK: %[[H1:.*]] = weft.matmul %[[Y]], %arg2 :
// CHECK: weft.reduce_mean
// CHECK: %[[H1R:.*]] = weft.matmul %[[Y]], %arg2 {weft.task = #weft.task<R>}
// CHECK-NOT: #weft.task<R
// CHECK: weft.relu_grad %[[H1R]]
// CHECK: %[[H0R:.*]] = weft.matmul %arg0, %arg1 {weft.task = #weft.task<R>}
// CHECK: weft.relu_grad %[[H0R]]
// CHECK: return
func.func @residual(%x: tensor<4x8xf32> {weft.input = "x"}, %w0: tensor<8x8xf32> {weft.param = "w0"},
                    %w1: tensor<8x8xf32> {weft.param = "w1"}) -> tensor<f32> {
  %h0 = weft.matmul %x, %w0 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r0 = weft.relu %h0 : tensor<4x8xf32>
  %y = weft.add %x, %r0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h1 = weft.matmul %y, %w1 : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r1 = weft.relu %h1 : tensor<4x8xf32>
  %z = weft.add %y, %r1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_mean %z {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
