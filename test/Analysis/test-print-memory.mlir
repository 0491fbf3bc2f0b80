// The static arena layout, against hand-placed offsets (64-byte alignment;
// greedy by size, best fit among storages whose lifetimes overlap).
// RUN: weft-opt %s --weft-test-print-memory -o /dev/null 2>&1 | FileCheck %s

// Steps: 0 matmul, 1 relu, 2 reshape (a view of 1), 3 add.
// Storages: 0 x (input, 128 B), 1 w (param, 256 B), 2 matmul [0,1], 3 relu +
// its reshape view [1,3], 4 add [3,3].
// Largest first: w (256) at 0; x (128) at 256; then the 128-byte activations
// in order of their first step: matmul at 384, relu (overlaps matmul at step
// 1) at 512, add (overlaps relu at step 3, not matmul) in matmul's gap at 384.
// CHECK: memory @f: storage 0 input offset=256 bytes=128 live=[0,3]
// CHECK-NEXT: memory @f: storage 1 param offset=0 bytes=256 live=[0,3]
// CHECK-NEXT: memory @f: storage 2 activation offset=384 bytes=128 live=[0,1]
// CHECK-NEXT: memory @f: storage 3 activation offset=512 bytes=128 live=[1,3]
// CHECK-NEXT: memory @f: storage 4 activation offset=384 bytes=128 live=[3,3]
// CHECK-NEXT: memory @f: arena_bytes=640
func.func @f(%x: tensor<4x8xf32> {weft.input = "x"}, %w: tensor<8x8xf32> {weft.param = "w"}) -> tensor<32xf32> {
  %0 = weft.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = weft.relu %0 : tensor<4x8xf32>
  %2 = weft.reshape %1 {shape = array<i64: 32>} : (tensor<4x8xf32>) -> tensor<32xf32>
  %3 = weft.add %2, %2 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  return %3 : tensor<32xf32>
}
