// Cost rules against hand-computed numbers (FLOPs: multiply-add = 2; bytes of
// f32 = 4). See CostOpInterface.
// RUN: weft-opt %s --split-input-file --weft-test-print-cost -o /dev/null 2>&1 | FileCheck %s

// [2,3] x [3,4]: 2*2*4*3 = 48 FLOPs; reads (6 + 12)*4 = 72 bytes, writes 8*4 = 32.
// Add: 8 FLOPs, reads 32 + 16, writes 32. Reshape is a view: 0 bytes.
// An op without a weft.task prints no task. A GEMM-shaped op prints its
// batch x m x n x k.
// CHECK-LABEL: cost @mlp: weft.matmul flops=48 read=72 written=32 gemm=1x2x4x3{{$}}
// CHECK-NEXT: cost @mlp: weft.add flops=8 read=48 written=32{{$}}
// CHECK-NEXT: cost @mlp: weft.reshape flops=0 read=0 written=0
// CHECK-NEXT: cost @mlp: weft.softmax flops=40 read=32 written=32
// CHECK-NEXT: cost @mlp: total flops=96 read=152 written=96
func.func @mlp(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<8xf32> {
  %0 = weft.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = weft.add %0, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = weft.reshape %1 {shape = array<i64: 8>} : (tensor<2x4xf32>) -> tensor<8xf32>
  %3 = weft.softmax %2 {axis = 0 : i64} : tensor<8xf32>
  return %3 : tensor<8xf32>
}

// -----

// Conv reads x (576 bytes), W (576) and the bias (32). LayerNorm: 8 FLOPs
// per element of the 2x3x16 input; writes Y (384) plus mean and inv_std_dev
// (6 floats each).
// Conv 3x3, C=4 -> M=8, group 2, 1x4x6x6 -> 1x8x4x4: each of the 128 outputs
// is (4/2)*3*3 = 18 multiply-adds: 2*128*18 = 4608, plus 128 for the bias.
// Embedding gather reads only the 2x3 gathered rows of 16 floats (+ 6 i64
// indices): 6*16*4 + 6*8 = 432 bytes, not the 1000x16 table.
// Batched matmul [4,2,3]x[3,5]: 4*2*5*3*2 = 240.
// CHECK-LABEL: cost @nets: weft.conv flops=4736 read=1184 written=512
// CHECK-NEXT: cost @nets: weft.gather flops=0 read=432 written=384
// CHECK-NEXT: cost @nets: weft.matmul flops=240 read=156 written=160 gemm=4x2x5x3{{$}}
// CHECK-NEXT: cost @nets: weft.layer_norm flops=768 read=448 written=432
func.func @nets(%x: tensor<1x4x6x6xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>,
                %table: tensor<1000x16xf32>, %ids: tensor<2x3xi64>,
                %a: tensor<4x2x3xf32>, %m: tensor<3x5xf32>, %g: tensor<16xf32>) {
  %0 = weft.conv %x, %w, %b {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x6x6xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %1 = weft.gather %table, %ids {axis = 0 : i64} : (tensor<1000x16xf32>, tensor<2x3xi64>) -> tensor<2x3x16xf32>
  %2 = weft.matmul %a, %m : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
  %3:3 = weft.layer_norm %1, %g {axis = 2 : i64} : (tensor<2x3x16xf32>, tensor<16xf32>) -> (tensor<2x3x16xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return
}

// -----

// An op in a task ends its line with the task's kind letter.
// CHECK-LABEL: cost @tasks: weft.matmul flops=48 read=72 written=32 gemm=1x2x4x3 task=F{{$}}
// CHECK-NEXT: cost @tasks: weft.matmul flops=48 read=72 written=32 gemm=1x2x4x3 task=B{{$}}
// CHECK-NEXT: cost @tasks: weft.matmul flops=48 read=72 written=32 gemm=1x2x4x3 task=W{{$}}
func.func @tasks(%x: tensor<2x3xf32>, %w: tensor<3x4xf32>) {
  %0 = weft.matmul %x, %w {weft.task = #weft.task<F, micro_batch = 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = weft.matmul %x, %w {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %2 = weft.matmul %x, %w {weft.task = #weft.task<W, micro_batch = 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// A gemm's k is A's contracted dimension: rows of A when transA. [4,16]^T
// x [4,8] -> [16,8], k = 4: 2*16*8*4 = 1024 FLOPs.
// CHECK-LABEL: cost @gemm_shapes: weft.gemm flops=1024 {{.*}} gemm=1x16x8x4{{$}}
func.func @gemm_shapes(%g: tensor<4x16xf32>, %h: tensor<4x8xf32>) -> tensor<16x8xf32> {
  %dw = weft.gemm %g, %h {transA = true} : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  return %dw : tensor<16x8xf32>
}
