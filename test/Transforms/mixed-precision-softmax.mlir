// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 --weft-autodiff | FileCheck %s --check-prefix=GRAD

// A transformer's core attention: the scaled, masked scores are bf16, the
// softmax reads them without a cast up and writes bf16 probabilities (the
// kernel computes in f32 and rounds once, as the cast chain did), the
// attention dropout runs on them in bf16 and the product with V reads
// them without a cast down: Megatron-LM's fused scale-mask-softmax and its
// dropout. The backward follows in bf16.
// CHECK-LABEL: func.func @attention_core
// CHECK: %[[W:.*]] = weft.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x4xi1>, tensor<bf16>, tensor<2x4x4xbf16>) -> tensor<2x4x4xbf16>
// CHECK-NEXT: %[[P:.*]] = weft.softmax %[[W]] {axis = 2 : i64} : tensor<2x4x4xbf16>
// CHECK-NEXT: %[[D:.*]], %{{.*}} = weft.dropout %[[P]] {{.*}} : (tensor<2x4x4xbf16>) -> (tensor<2x4x4xbf16>, tensor<2x4x4xi1>)
// CHECK-NEXT: weft.matmul %[[D]], %{{.*}} : (tensor<2x4x4xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
// CHECK-NOT: weft.cast {{.*}}tensor<2x4x4x
// GRAD-LABEL: func.func @attention_core
// GRAD: weft.dropout_grad {{.*}} -> tensor<2x4x4xbf16>
// GRAD: weft.softmax_grad {{.*}} : tensor<2x4x4xbf16>
// GRAD-NOT: weft.cast {{.*}}tensor<2x4x4x
func.func @attention_core(%x: tensor<2x4x8xf32> {weft.input = "x"},
                          %mask: tensor<4x4xi1> {weft.input = "mask"},
                          %wq: tensor<8x8xf32> {weft.param = "wq"},
                          %wk: tensor<8x8xf32> {weft.param = "wk"},
                          %wv: tensor<8x8xf32> {weft.param = "wv"}) -> tensor<f32> {
  %q = weft.matmul %x, %wq : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %k = weft.matmul %x, %wk : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %v = weft.matmul %x, %wv : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s = weft.matmul %q, %k {transB = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %c = weft.constant dense<2.0> : tensor<f32>
  %d = weft.div %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %inf = weft.constant dense<0xFF800000> : tensor<f32>
  %m = weft.where %mask, %inf, %d : (tensor<4x4xi1>, tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %p = weft.softmax %m {axis = 2 : i64} : tensor<2x4x4xf32>
  %pd, %keep = weft.dropout %p {ratio = 0.1 : f64, training = true, seed = 7 : i64} : (tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xi1>)
  %y = weft.matmul %pd, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Without dropout (inference, or a model exported with p = 0): the softmax
// is read by the matmul alone, and narrows all the same.
// CHECK-LABEL: func.func @no_dropout
// CHECK: %[[P:.*]] = weft.softmax %{{.*}} {axis = 1 : i64} : tensor<4x4xbf16>
// CHECK-NEXT: weft.matmul %[[P]], %{{.*}} : (tensor<4x4xbf16>, tensor<4x8xbf16>)
func.func @no_dropout(%x: tensor<4x8xf32> {weft.input = "x"},
                      %wk: tensor<8x4xf32> {weft.param = "wk"},
                      %wv: tensor<8x8xf32> {weft.param = "wv"}) -> tensor<f32> {
  %s = weft.matmul %x, %wk : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %v = weft.matmul %x, %wv : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %p = weft.softmax %s {axis = 1 : i64} : tensor<4x4xf32>
  %y = weft.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Left in f32: probabilities an f32 op also reads (here an add with an
// f32 input), and a dropout's output read in f32.
// CHECK-LABEL: func.func @kept_f32
// CHECK: weft.softmax {{.*}} : tensor<4x4xf32>
// CHECK: weft.softmax {{.*}} : tensor<4x4xf32>
// CHECK-NOT: weft.softmax {{.*}}bf16
func.func @kept_f32(%x: tensor<4x8xf32> {weft.input = "x"},
                    %r: tensor<4x4xf32> {weft.input = "r"},
                    %wk: tensor<8x4xf32> {weft.param = "wk"},
                    %wv: tensor<8x8xf32> {weft.param = "wv"}) -> tensor<f32> {
  %s = weft.matmul %x, %wk : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %v = weft.matmul %x, %wv : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %p = weft.softmax %s {axis = 1 : i64} : tensor<4x4xf32>
  %y = weft.matmul %p, %v : (tensor<4x4xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = weft.add %p, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %p2 = weft.softmax %s {axis = 1 : i64} : tensor<4x4xf32>
  %pd, %keep = weft.dropout %p2 {ratio = 0.1 : f64, training = true, seed = 7 : i64} : (tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xi1>)
  %b = weft.add %pd, %r : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %l1 = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  %l2 = weft.reduce_mean %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  %l3 = weft.reduce_mean %b {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  %l12 = weft.add %l1, %l2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %l = weft.add %l12, %l3 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
