// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-mixed-precision=precision=bf16 --weft-autodiff | FileCheck %s --check-prefix=GRAD

// Sequence parallelism's LayerNorm: its output leaves the sequence-parallel
// region through the all-gather and f's copy before the column-parallel
// linear. The cast down commutes with both, so the norm writes bf16 and the
// all-gather moves bf16 (half the bytes, as Megatron-LM's); its adjoint's
// reduce-scatter sums bf16 gradients, as Megatron-LM's does.
// CHECK-LABEL: func.func @gathered_layer_norm
// CHECK: %[[Y:.*]], %{{.*}}, %{{.*}} = weft.layer_norm %{{.*}}, %arg3, %arg4 {axis = 1 : i64} : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>) -> (tensor<2x8xbf16>, tensor<2x1xf32>, tensor<2x1xf32>)
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %[[Y]] on @mesh grid_axes = [2] gather_axis = 0 : tensor<2x8xbf16> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[F:.*]] = weft.copy_to_tensor_parallel %[[G]] {grid = @mesh, grid_axes = array<i16: 2>} : tensor<4x8xbf16>
// CHECK-NEXT: weft.matmul %[[F]], %arg2 : (tensor<4x8xbf16>, tensor<8x8xbf16>)
// GRAD-LABEL: func.func @gathered_layer_norm
// GRAD: shard.reduce_scatter {{.*}} : tensor<4x8xbf16> -> tensor<2x8xbf16>
// GRAD: weft.layer_norm_grad {{.*}} : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x8xbf16>) -> (tensor<2x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
module {
  shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @gathered_layer_norm(%x: tensor<2x8xf32> {weft.input = "x"},
                                 %w1: tensor<8x8xf32> {weft.param = "w1"},
                                 %w: tensor<8x8xf32> {weft.param = "w"},
                                 %g: tensor<8xf32> {weft.param = "g"},
                                 %b: tensor<8xf32> {weft.param = "b"}) -> tensor<f32> {
    %r = weft.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %y, %m, %s = weft.layer_norm %r, %g, %b {axis = 1 : i64} : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    %whole = shard.all_gather %y on @mesh grid_axes = [2] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
    %f = weft.copy_to_tensor_parallel %whole {grid = @mesh, grid_axes = array<i16: 2>} : tensor<4x8xf32>
    %h = weft.matmul %f, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %l = weft.reduce_mean %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// An RMSNorm between linear layers (Llama's), gathered as above: bf16 in
// and out, its scale the bf16 working copy; inv_rms stays f32.
// CHECK-LABEL: func.func @gathered_rms_norm
// CHECK: %[[Y:.*]], %{{.*}} = weft.rms_norm %{{.*}}, %arg3 {axis = 1 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x8xbf16>, tensor<8xbf16>) -> (tensor<2x8xbf16>, tensor<2x1xf32>)
// CHECK-NEXT: %[[G:.*]] = shard.all_gather %[[Y]] {{.*}} : tensor<2x8xbf16> -> tensor<4x8xbf16>
// GRAD-LABEL: func.func @gathered_rms_norm
// GRAD: weft.rms_norm_grad {{.*}} : (tensor<2x8xbf16>, tensor<8xbf16>, tensor<2x1xf32>, tensor<2x8xbf16>) -> (tensor<2x8xbf16>, tensor<8xbf16>)
module {
  shard.grid @mesh(shape = 1x1x2) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  func.func @gathered_rms_norm(%x: tensor<2x8xf32> {weft.input = "x"},
                               %w1: tensor<8x8xf32> {weft.param = "w1"},
                               %w: tensor<8x8xf32> {weft.param = "w"},
                               %g: tensor<8xf32> {weft.param = "g"}) -> tensor<f32> {
    %r = weft.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
    %y, %inv = weft.rms_norm %r, %g {axis = 1 : i64, epsilon = 1.0e-6 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>)
    %whole = shard.all_gather %y on @mesh grid_axes = [2] gather_axis = 0 : tensor<2x8xf32> -> tensor<4x8xf32>
    %f = weft.copy_to_tensor_parallel %whole {grid = @mesh, grid_axes = array<i16: 2>} : tensor<4x8xf32>
    %h = weft.matmul %f, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %l = weft.reduce_mean %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// -----

// An RMSNorm whose scale is an f32 input, not a 16-bit parameter: the
// kernels take the scale in the input's type, so it stays f32 throughout.
// CHECK-LABEL: func.func @f32_scale
// CHECK: weft.rms_norm {{.*}} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>)
func.func @f32_scale(%x: tensor<2x8xf32> {weft.input = "x"},
                     %g: tensor<8xf32> {weft.input = "g"},
                     %w1: tensor<8x8xf32> {weft.param = "w1"},
                     %w: tensor<8x8xf32> {weft.param = "w"}) -> tensor<f32> {
  %r = weft.matmul %x, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %y, %inv = weft.rms_norm %r, %g {axis = 1 : i64, epsilon = 1.0e-6 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>)
  %h = weft.matmul %y, %w : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %l = weft.reduce_mean %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
