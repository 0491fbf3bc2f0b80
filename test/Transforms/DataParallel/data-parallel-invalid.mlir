// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-autodiff --weft-data-parallel
// RUN: not weft-opt %s --split-input-file --weft-autodiff --weft-append-optimizer --weft-data-parallel=bucket-cap-mb=-1 2>&1 | FileCheck %s --check-prefix=CAP

// Gradients without an update: nothing to average them into.
module {
  shard.grid @mesh(shape = 1x2x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
  // expected-error @below {{weft-data-parallel: the step updates no parameter; data parallelism needs a training step}}
  func.func @gradients(%x: tensor<4x3xf32> {weft.input = "x"}, %w: tensor<3x2xf32> {weft.param = "w"}) -> tensor<f32> {
    %0 = weft.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
    %1 = weft.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}

// CAP: error: weft-data-parallel: bucket-cap-mb must be >= 0
