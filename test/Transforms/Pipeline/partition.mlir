// RUN: weft-opt %s --split-input-file --weft-partition-pipeline="stages=2" | FileCheck %s
// RUN: weft-opt %s --split-input-file --weft-partition-pipeline="stages=3 balance=1,1,4" | FileCheck %s --check-prefix=BALANCE

// Two equal 256x256 matmul layers, each followed by a cheap relu: the
// bottleneck partition cuts between the layers (2 + 2 ops). The constant
// stays unstaged (every stage that uses one gets a copy).
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: weft.pipeline_stages = 2
// CHECK: weft.constant
// CHECK-NOT: weft.task
// CHECK: weft.matmul {{.*}}stage = 0
// CHECK: weft.relu {{.*}}stage = 0
// CHECK: weft.matmul {{.*}}stage = 1
// CHECK: weft.relu {{.*}}stage = 1
// CHECK: weft.reduce_mean {{.*}}stage = 1

// torchgpipe-style balance: ops per stage, in order.
// BALANCE-LABEL: func.func @mlp
// BALANCE: weft.matmul {{.*}}stage = 0
// BALANCE: weft.relu {{.*}}stage = 1
// BALANCE: weft.matmul {{.*}}stage = 2
// BALANCE: weft.relu {{.*}}stage = 2
// BALANCE: weft.reduce_mean {{.*}}stage = 2
func.func @mlp(%x: tensor<256x256xf32> {weft.input = "x"},
               %w0: tensor<256x256xf32> {weft.param = "w0"},
               %w1: tensor<256x256xf32> {weft.param = "w1"}) -> tensor<f32> {
  %c = weft.constant dense<2.0> : tensor<f32>
  %0 = weft.matmul %x, %w0 : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %1 = weft.relu %0 : tensor<256x256xf32>
  %2 = weft.matmul %1, %w1 : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %3 = weft.relu %2 : tensor<256x256xf32>
  %4 = weft.mul %3, %c : (tensor<256x256xf32>, tensor<f32>) -> tensor<256x256xf32>
  %5 = weft.reduce_mean %4 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<256x256xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}
