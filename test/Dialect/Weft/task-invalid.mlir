// RUN: weft-opt %s --split-input-file --verify-diagnostics

// An op's task (weft/Dialect/Weft/IR/Task.h) is a verified #weft.task: a
// kind of five, non-negative indices, no micro-batch on an update; and a
// pipelined function's ops lie within its stages and micro-batches.

func.func @unknown_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a task's kind is F, B, R, U or W, not 'X'}}
  %0 = weft.relu %x {weft.task = #weft.task<X>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unknown_field(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a task's fields are micro_batch, stage and chunk, not 'microbatch'}}
  %0 = weft.relu %x {weft.task = #weft.task<B, microbatch = 1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @update_of_a_micro_batch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{an optimizer update (U) belongs to no micro-batch, but has micro_batch = 0}}
  %0 = weft.relu %x {weft.task = #weft.task<U, micro_batch = 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_micro_batch(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a task's micro_batch is non-negative, not -1}}
  %0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = -1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @task_as_text(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.task' must be a #weft.task<...>, not "backward"}}
  %0 = weft.relu %x {weft.task = "backward"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage_on_an_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'weft.stage' is a stage function's; an op's stage is in its 'weft.task'}}
  %0 = weft.relu %x {weft.stage = 1 : i64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 2 : i64} {
  // expected-error @+1 {{is on stage 2 of a function with 2 pipeline stages}}
  %0 = weft.relu %x {weft.task = #weft.task<F, stage = 2>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage1(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 1 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  // expected-error @+1 {{is on stage 0, in the function of stage 1}}
  %0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @stage0(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 0 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  // expected-error @+1 {{belongs to micro-batch 2 of a step with 2 micro-batches}}
  %0 = weft.relu %x {weft.task = #weft.task<B, micro_batch = 2, stage = 0>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_stages(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 0 : i64} {
  // expected-error @-2 {{'weft.pipeline_stages' must be a positive i64, not 0 : i64}}
  return %x : tensor<4xf32>
}

// -----

func.func @stage1(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 1 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  %c = weft.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{has no 'weft.task' in the function of stage 1}}
  %0 = weft.add %x, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @field_twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{a task's 'stage' is given twice}}
  %0 = weft.relu %x {weft.task = #weft.task<B, stage = 1, stage = 2>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Not an i64: an error, not a crash.
func.func @unsigned_stages(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 2 : ui64} {
  // expected-error @-2 {{'weft.pipeline_stages' must be a positive i64, not 2 : ui64}}
  return %x : tensor<4xf32>
}

// -----

func.func @stage1(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 1 : si32, weft.pipeline_stages = 2 : i64} {
  // expected-error @-2 {{'weft.stage' must be a non-negative index, not 1 : si32}}
  return %x : tensor<4xf32>
}

// -----

// Each chunk runs a micro-batch's F, then its B, then its W (the schedules
// of weft/Analysis/TaskOrder.h): a W before its B is a wrong order.
func.func @stage0(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 0 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  %0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 0>} : tensor<4xf32>
  %1 = weft.relu %0 {weft.task = #weft.task<W, micro_batch = 0, stage = 0>} : tensor<4xf32>
  // expected-error @+1 {{runs backward work (#weft.task<B, micro_batch = 0, stage = 0>) after that micro-batch's weight work on this rank}}
  %2 = weft.relu %1 {weft.task = #weft.task<B, micro_batch = 0, stage = 0>} : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// A B before its F.
func.func @stage1(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 1 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  %0 = weft.relu %x {weft.task = #weft.task<B, micro_batch = 1, stage = 1>} : tensor<4xf32>
  // Another micro-batch's forward may follow.
  %1 = weft.relu %0 {weft.task = #weft.task<F, micro_batch = 0, stage = 1>} : tensor<4xf32>
  // expected-error @+1 {{runs forward work (#weft.task<F, micro_batch = 1, stage = 1>) after that micro-batch's backward work on this rank}}
  %2 = weft.relu %1 {weft.task = #weft.task<F, micro_batch = 1, stage = 1>} : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// With model chunks, a rank's function names its chunks' stages: ZB-V's
// rank 0 of 2 runs stages 0 and 3.
func.func @stage0(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 0 : i64, weft.pipeline_stages = 4 : i64,
                weft.micro_batches = 2 : i64,
                weft.chunk_stages = array<i64: 0, 3>} {
  %0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 0>} : tensor<4xf32>
  %1 = weft.relu %0 {weft.task = #weft.task<F, micro_batch = 0, stage = 3, chunk = 1>} : tensor<4xf32>
  // expected-error @+1 {{is chunk 1 on stage 2, in the function of rank 0 whose chunks are stages 0, 3}}
  %2 = weft.relu %1 {weft.task = #weft.task<F, micro_batch = 0, stage = 2, chunk = 1>} : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Without chunk_stages a function runs one stage, as chunk 0.
func.func @stage1(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.stage = 1 : i64, weft.pipeline_stages = 2 : i64,
                weft.micro_batches = 2 : i64} {
  // expected-error @+1 {{is on stage 1 (chunk 1), in the function of stage 1}}
  %0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0, stage = 1, chunk = 1>} : tensor<4xf32>
  return %0 : tensor<4xf32>
}
