// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 --weft-autodiff | FileCheck %s --check-prefix=GRAD

// A transformer's LayerNorm: the bf16 residual stream in, only a bf16
// linear layer (through a reshape) out. It reads and writes bf16, reads
// its scale and bias as the bf16 working copies they are, and nothing is
// cast.
// CHECK-LABEL: func.func @between_linears
// CHECK: %[[R:.*]] = weft.matmul {{.*}} -> tensor<2x4x8xbf16>
// CHECK-NEXT: %[[Y:.*]], %{{.*}}, %{{.*}} = weft.layer_norm %[[R]], %arg3, %arg4 {axis = 2 : i64} : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<2x4x8xbf16>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
// CHECK-NEXT: %[[Y2:.*]] = weft.reshape %[[Y]] {shape = array<i64: 8, 8>} : (tensor<2x4x8xbf16>) -> tensor<8x8xbf16>
// CHECK-NEXT: weft.matmul %[[Y2]], %arg2 : (tensor<8x8xbf16>, tensor<8x8xbf16>)
// The backward: bf16 input, scale and gradients, f32 statistics.
// GRAD-LABEL: func.func @between_linears
// GRAD: weft.layer_norm_grad {{.*}} : (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<2x4x8xbf16>) -> (tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
func.func @between_linears(%x: tensor<2x4x8xf32> {weft.input = "x"},
                           %w1: tensor<8x8xf32> {weft.param = "w1"},
                           %w: tensor<8x8xf32> {weft.param = "w"},
                           %g: tensor<8xf32> {weft.param = "g"},
                           %b: tensor<8xf32> {weft.param = "b"}) -> tensor<f32> {
  %r = weft.matmul %x, %w1 : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %y, %m, %s = weft.layer_norm %r, %g, %b {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
  %y2 = weft.reshape %y {shape = array<i64: 8, 8>} : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
  %h = weft.matmul %y2, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %l = weft.reduce_mean %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Left in f32: a LayerNorm of a bf16 value whose output an f32 op
// (softmax) also reads, and one whose input is f32 (a model input, not a
// cast up).
// CHECK-LABEL: func.func @kept_f32
// CHECK: weft.layer_norm {{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>
// CHECK: weft.layer_norm {{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>
// CHECK-NOT: weft.layer_norm {{.*}}bf16
func.func @kept_f32(%x: tensor<2x8xf32> {weft.input = "x"},
                    %w1: tensor<8x8xf32> {weft.param = "w1"},
                    %w: tensor<8x8xf32> {weft.param = "w"},
                    %g: tensor<8xf32> {weft.param = "g"}) -> tensor<f32> {
  %r = weft.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %y, %m, %s = weft.layer_norm %r, %g {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %h = weft.matmul %y, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %p = weft.softmax %y {axis = 1 : i64} : tensor<2x8xf32>
  %z, %m2, %s2 = weft.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %h2 = weft.matmul %z, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %a = weft.add %h, %p : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %a2 = weft.add %a, %h2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %l = weft.reduce_mean %a2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The cast down right after the LayerNorm (its reader next in the block):
// narrowed all the same.
// CHECK-LABEL: func.func @adjacent
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = weft.layer_norm %{{.*}} : (tensor<2x8xbf16>, tensor<8xbf16>) -> (tensor<2x8xbf16>
// CHECK-NEXT: weft.matmul %[[Y]], %arg2 : (tensor<2x8xbf16>, tensor<8x8xbf16>)
func.func @adjacent(%x: tensor<2x8xf32> {weft.input = "x"},
                    %w1: tensor<8x8xf32> {weft.param = "w1"},
                    %w: tensor<8x8xf32> {weft.param = "w"},
                    %g: tensor<8xf32> {weft.param = "g"}) -> tensor<f32> {
  %r = weft.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %y, %m, %s = weft.layer_norm %r, %g {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %h = weft.matmul %y, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %l = weft.reduce_mean %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A bias that is an f32 input, not a 16-bit parameter: scale and bias stay
// f32 together (the kernels take one affine type), the scale cast up.
// CHECK-LABEL: func.func @f32_bias
// CHECK: %[[G:.*]] = weft.cast %arg3 {nearest_even = true, to = f32} : (tensor<8xbf16>) -> tensor<8xf32>
// CHECK: weft.layer_norm %{{.*}}, %[[G]], %arg4 {axis = 1 : i64} : (tensor<2x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xbf16>
func.func @f32_bias(%x: tensor<2x8xf32> {weft.input = "x"},
                    %w1: tensor<8x8xf32> {weft.param = "w1"},
                    %w: tensor<8x8xf32> {weft.param = "w"},
                    %g: tensor<8xf32> {weft.param = "g"},
                    %b: tensor<8xf32> {weft.input = "b"}) -> tensor<f32> {
  %r = weft.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %y, %m, %s = weft.layer_norm %r, %g, %b {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %h = weft.matmul %y, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %l = weft.reduce_mean %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
