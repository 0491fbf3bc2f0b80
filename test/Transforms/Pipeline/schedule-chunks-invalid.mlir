// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-schedule=schedule=interleaved

// weft-schedule runs the placement weft-partition-pipeline recorded
// (weft.stage_ranks) only if it is the schedule's: interleaved runs stage s
// on rank s mod P, not ZB-V's V.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 4 : i64,
                weft.stage_ranks = array<i64: 0, 1, 1, 0>} {
  // expected-error @-3 {{weft-schedule: interleaved runs stage 2 on rank 0; the partition placed it on rank 1}}
  return %x : tensor<4xf32>
}

// -----

// Rank 0 runs three stages, rank 1 one: not chunks of a schedule.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 4 : i64,
                weft.stage_ranks = array<i64: 0, 0, 0, 1>} {
  // expected-error @-3 {{weft-schedule: interleaved runs 2 model chunk(s) per rank; the partition placed 4 stages on 2 ranks}}
  return %x : tensor<4xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32>
    attributes {weft.pipeline_stages = 2 : i64,
                weft.stage_ranks = array<i64: 0, -1>} {
  // expected-error @-3 {{weft-schedule: stage 1 is placed on rank -1}}
  return %x : tensor<4xf32>
}
