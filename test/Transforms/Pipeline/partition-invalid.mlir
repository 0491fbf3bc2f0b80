// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-partition-pipeline="stages=3" 2>&1
// RUN: not weft-opt %s --weft-partition-pipeline="stages=2 balance=1,2" 2>&1 | FileCheck %s --check-prefix=SUM
// RUN: not weft-opt %s --weft-partition-pipeline="stages=2 balance=2" 2>&1 | FileCheck %s --check-prefix=LENGTH
// RUN: not weft-opt %s --weft-partition-pipeline="stages=2 device-model=a100" 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not weft-opt %s --weft-simulate-pipeline="device-model=a100" 2>&1 | FileCheck %s --check-prefix=DEVICE

// SUM: error: weft-partition-pipeline: balance sums to 3 ops, the function has 2 (constants excluded)
// LENGTH: error: weft-partition-pipeline: balance has 1 entries for stages=2
// DEVICE: error: unknown device model 'a100' (known: a100-sxm4-80gb, cpu, h100-sxm5-80gb, h200-sxm-141gb; or a JSON file's path)

// expected-error @+1 {{weft-partition-pipeline: stages=3 must be between 1 and the number of ops (2)}}
func.func @small(%x: tensor<4xf32> {weft.input = "x"}) -> tensor<f32> {
  %0 = weft.relu %x : tensor<4xf32>
  %1 = weft.reduce_mean %0 {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}
