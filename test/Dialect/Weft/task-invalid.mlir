// RUN: weft-opt %s --split-input-file --verify-diagnostics

// The task attributes (weft/Dialect/Weft/IR/Task.h) are verified on every
// op: a phase is one of three, a recompute mark only in the backward, an
// update in no micro-batch, indices non-negative and in range of the
// function's stages and micro-batches.

func.func @unknown_phase(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.phase' must be "forward", "backward" or "optimizer", not "backwards"}}
  %0 = weft.relu %x {weft.phase = "backwards"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @recompute_in_forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.recompute' marks a forward recomputed in the backward: the op's 'weft.phase' must be "backward"}}
  %0 = weft.relu %x {weft.recompute} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @update_of_a_micro_batch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{is an optimizer update, which belongs to no micro-batch, but has 'weft.micro_batch'}}
  %0 = weft.relu %x {weft.phase = "optimizer", weft.micro_batch = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_micro_batch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.micro_batch' must be a non-negative i64 index, not -1 : i64}}
  %0 = weft.relu %x {weft.micro_batch = -1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage_as_text(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.stage' must be a non-negative i64 index, not "1"}}
  %0 = weft.relu %x {weft.stage = "1"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 2 : i64} {
  // expected-error @+1 {{is on stage 2 of a function with 2 pipeline stages}}
  %0 = weft.relu %x {weft.stage = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage1(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 1 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  // expected-error @+1 {{is on stage 0, in the function of stage 1}}
  %0 = weft.relu %x {weft.stage = 0 : i64, weft.micro_batch = 0 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage0(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 0 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  // expected-error @+1 {{belongs to micro-batch 2 of a step with 2 micro-batches}}
  %0 = weft.relu %x {weft.stage = 0 : i64, weft.micro_batch = 2 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_stages(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 0 : i64} {
  // expected-error @-2 {{'weft.pipeline_stages' must be a positive integer, not 0 : i64}}
  return %x : tensor<4xf32>
}
