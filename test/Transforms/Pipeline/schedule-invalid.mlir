// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-schedule=schedule=1f1b

// Stage 1 reads stage 0's result without a transfer (weft-insert-send-recv
// did not run): refused before any op leaves @main.
func.func @main(%x: tensor<4x8xf32> {weft.input = "x"})
    -> (tensor<4x8xf32> {weft.output = "y"}) attributes {weft.pipeline_stages = 2 : i64} {
  %0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 0>} : tensor<4x8xf32>
  // expected-error @+1 {{weft-schedule: an operand of weft.relu (#weft.task<F, micro_batch = 0, stage = 1>) on rank 1 is not available there}}
  %1 = weft.relu %0 {weft.task = #weft.task<F, micro_batch = 0, stage = 1>} : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
