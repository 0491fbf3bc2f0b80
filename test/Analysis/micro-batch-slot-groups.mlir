// Which carried storages share slots, and what the program's storages
// go around (MicroBatchSlots.cpp).
// RUN: weft-opt %s --split-input-file --weft-test-print-memory -o /dev/null 2>&1 | FileCheck %s

// A zero-bubble order on one stage, F0 F1 B0 F2 B1 W0 F3 B2 W1 B3 W2 W3:
// each micro-batch keeps %k from its F to its B and holds %h from its B to
// its W. Apart, each needs 2 slots (at most two micro-batches between F
// and B, and two between B and W); together a micro-batch spans F to W,
// three are in flight, and each slot holds both (they are live together
// at the B): 3 x 1024 bytes where apart they take 2 x 512 + 2 x 512. So
// they form two groups. (Grouped by slot count alone, as before, they
// were one group of 3 slots and a 4096-byte arena.) The running sum and
// %x go above the slots, live through them.
// CHECK-LABEL: memory @zero_bubble: storage 0
// CHECK: memory @zero_bubble: slots 0 count=2 bytes=512
// CHECK-NEXT: memory @zero_bubble: slots 1 count=2 bytes=512
// CHECK-NEXT: memory @zero_bubble: arena_bytes=3072
func.func @zero_bubble(%x: tensor<128xf32> {weft.input = "x"}) -> tensor<128xf32> {
  %k0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0>} : tensor<128xf32>
  %k1 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1>} : tensor<128xf32>
  %h0 = weft.exp %k0 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<128xf32>
  %k2 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 2>} : tensor<128xf32>
  %h1 = weft.exp %k1 {weft.task = #weft.task<B, micro_batch = 1>} : tensor<128xf32>
  %w0 = weft.neg %h0 {weft.task = #weft.task<W, micro_batch = 0>} : tensor<128xf32>
  %k3 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 3>} : tensor<128xf32>
  %h2 = weft.exp %k2 {weft.task = #weft.task<B, micro_batch = 2>} : tensor<128xf32>
  %a1 = weft.add %w0, %h1 {weft.accumulate, weft.task = #weft.task<W, micro_batch = 1>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %h3 = weft.exp %k3 {weft.task = #weft.task<B, micro_batch = 3>} : tensor<128xf32>
  %a2 = weft.add %a1, %h2 {weft.accumulate, weft.task = #weft.task<W, micro_batch = 2>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %a3 = weft.add %a2, %h3 {weft.accumulate, weft.task = #weft.task<W, micro_batch = 3>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  return %a3 : tensor<128xf32>
}

// -----

// 1F1B, F0 F1 B0 F2 B1 B2, where the last micro-batch also carries %big
// (2048 bytes), first used before its %k2. Carried storages match across
// micro-batches by size and order of first use: the three %k rotate over
// 2 slots of 512 bytes and %big has a slot of its own. (Matched by order
// alone, %big took %k's place and %k2 the next: 2 slots of 2048 bytes,
// and a 10240-byte arena.)
// CHECK-LABEL: memory @odd_last: storage 0
// CHECK: storage 2 activation offset=[[K:[0-9]+]] bytes=512 live=[0,2] micro_batch=0 slots=0
// CHECK: storage 5 activation offset={{[0-9]+}} bytes=2048 live=[3,8] micro_batch=2 slots=1
// CHECK-NEXT: storage 6 activation offset=[[K]] bytes=512 live=[4,7] micro_batch=2 slots=0
// CHECK: memory @odd_last: slots 0 count=2 bytes=512
// CHECK-NEXT: memory @odd_last: slots 1 count=1 bytes=2048
// CHECK-NEXT: memory @odd_last: arena_bytes=8704
func.func @odd_last(%x: tensor<128xf32> {weft.input = "x"}, %y: tensor<512xf32> {weft.input = "y"}) -> tensor<128xf32> {
  %k0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0>} : tensor<128xf32>
  %k1 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1>} : tensor<128xf32>
  %g0 = weft.exp %k0 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<128xf32>
  %big = weft.relu %y {weft.task = #weft.task<F, micro_batch = 2>} : tensor<512xf32>
  %k2 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 2>} : tensor<128xf32>
  %g1 = weft.exp %k1 {weft.task = #weft.task<B, micro_batch = 1>} : tensor<128xf32>
  %a1 = weft.add %g0, %g1 {weft.accumulate, weft.task = #weft.task<B, micro_batch = 1>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %g2 = weft.exp %k2 {weft.task = #weft.task<B, micro_batch = 2>} : tensor<128xf32>
  %gb = weft.neg %big {weft.task = #weft.task<B, micro_batch = 2>} : tensor<512xf32>
  %a2 = weft.add %a1, %g2 {weft.accumulate, weft.task = #weft.task<B, micro_batch = 2>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  return %a2 : tensor<128xf32>
}

// -----

// F0 F1 B1 W1 B0 W0: each micro-batch keeps %k to its B and %q to its W,
// one slot of 1024 bytes each (2 slots). The running sum %h1, born in B1
// after %k1's last read and read by B0, is the program's: it goes around
// the micro-batches' own storages, into %k1's freed bytes (offset 1536),
// not above slot 1, which is busy until W1 reads %q1. (Around whole slots
// it went above %x: a 3584-byte arena.)
// CHECK-LABEL: memory @sum_in_freed_bytes: storage 0
// CHECK: storage 3 activation offset=[[K1:[0-9]+]] bytes=512 live=[2,4] micro_batch=1 slots=0
// CHECK: storage 6 activation offset=[[K1]] bytes=512 live=[5,9]{{$}}
// CHECK: memory @sum_in_freed_bytes: slots 0 count=2 bytes=1024
// CHECK-NEXT: memory @sum_in_freed_bytes: arena_bytes=3072
func.func @sum_in_freed_bytes(%x: tensor<128xf32> {weft.input = "x"}) -> tensor<128xf32> {
  %k0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0>} : tensor<128xf32>
  %q0 = weft.exp %x {weft.task = #weft.task<F, micro_batch = 0>} : tensor<128xf32>
  %k1 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1>} : tensor<128xf32>
  %q1 = weft.exp %x {weft.task = #weft.task<F, micro_batch = 1>} : tensor<128xf32>
  %g1 = weft.exp %k1 {weft.task = #weft.task<B, micro_batch = 1>} : tensor<128xf32>
  %h1 = weft.neg %g1 {weft.task = #weft.task<B, micro_batch = 1>} : tensor<128xf32>
  %r1 = weft.neg %q1 {weft.task = #weft.task<W, micro_batch = 1>} : tensor<128xf32>
  %g0 = weft.exp %k0 {weft.task = #weft.task<B, micro_batch = 0>} : tensor<128xf32>
  %a0 = weft.add %h1, %g0 {weft.accumulate, weft.task = #weft.task<B, micro_batch = 0>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %r0 = weft.neg %q0 {weft.task = #weft.task<W, micro_batch = 0>} : tensor<128xf32>
  return %a0 : tensor<128xf32>
}
