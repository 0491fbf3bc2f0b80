// Placement by micro-batch slots (MemoryPlan.h): three micro-batches in
// 1F1B order on one stage, F0 F1 B0 F2 B1 B2, at most two in flight.
// RUN: weft-opt %s --weft-test-print-memory -o /dev/null 2>&1 | FileCheck %s

// Each forward keeps %f and %s (read by its backward: carried) and makes
// %t, read only inside the forward (transient), as are the backwards' %g1
// and %g2 (read by the sum in their own backward). %g0 is the running sum's
// bytes (the adds accumulate in place), read by micro-batches 0 to 2: the
// program's, as are %o and %p (the optimizer's: no micro-batch).
// Regions: every task instance's transients from 0 (instances never run
// together); the carried storages' slots from 512, two of them (micro-
// batches 0 and 2 are never live together, 0 and 1 are), each 1024 bytes
// (f and s of one micro-batch, live together): micro-batch 2 takes
// micro-batch 0's bytes. The program's storages go around those blocks: x
// and the sum above them; %o and %p, live after the micro-batches, in the
// bytes the first transient block and slot 0 held.
// CHECK: memory @step: storage 0 input offset=2560 bytes=512 live=[0,15]
// CHECK-NEXT: storage 1 activation offset=512 bytes=512 live=[0,6] micro_batch=0 slots=0
// CHECK-NEXT: storage 2 activation offset=0 bytes=512 live=[1,2] micro_batch=0 transient
// CHECK-NEXT: storage 3 activation offset=1024 bytes=512 live=[2,6] micro_batch=0 slots=0
// CHECK-NEXT: storage 4 activation offset=1536 bytes=512 live=[3,10] micro_batch=1 slots=0
// CHECK-NEXT: storage 5 activation offset=0 bytes=512 live=[4,5] micro_batch=1 transient
// CHECK-NEXT: storage 6 activation offset=2048 bytes=512 live=[5,10] micro_batch=1 slots=0
// CHECK-NEXT: storage 7 activation offset=3072 bytes=512 live=[6,14]{{$}}
// CHECK-NEXT: storage 8 activation offset=512 bytes=512 live=[7,12] micro_batch=2 slots=0
// CHECK-NEXT: storage 9 activation offset=0 bytes=512 live=[8,9] micro_batch=2 transient
// CHECK-NEXT: storage 10 activation offset=1024 bytes=512 live=[9,12] micro_batch=2 slots=0
// CHECK-NEXT: storage 11 activation offset=0 bytes=512 live=[10,11] micro_batch=1 transient
// CHECK-NEXT: storage 12 activation offset=0 bytes=512 live=[12,13] micro_batch=2 transient
// CHECK-NEXT: storage 13 activation offset=0 bytes=512 live=[14,15]{{$}}
// CHECK-NEXT: storage 14 activation offset=512 bytes=512 live=[15,15]{{$}}
// CHECK-NEXT: memory @step: slots 0 count=2 bytes=1024
// CHECK-NEXT: memory @step: arena_bytes=3584
func.func @step(%x: tensor<128xf32> {weft.input = "x"}) -> tensor<128xf32> {
  %f0 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 0>} : tensor<128xf32>
  %t0 = weft.exp %f0 {weft.task = #weft.task<F, micro_batch = 0>} : tensor<128xf32>
  %s0 = weft.neg %t0 {weft.task = #weft.task<F, micro_batch = 0>} : tensor<128xf32>
  %f1 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 1>} : tensor<128xf32>
  %t1 = weft.exp %f1 {weft.task = #weft.task<F, micro_batch = 1>} : tensor<128xf32>
  %s1 = weft.neg %t1 {weft.task = #weft.task<F, micro_batch = 1>} : tensor<128xf32>
  %g0 = weft.mul %f0, %s0 {weft.task = #weft.task<B, micro_batch = 0>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %f2 = weft.relu %x {weft.task = #weft.task<F, micro_batch = 2>} : tensor<128xf32>
  %t2 = weft.exp %f2 {weft.task = #weft.task<F, micro_batch = 2>} : tensor<128xf32>
  %s2 = weft.neg %t2 {weft.task = #weft.task<F, micro_batch = 2>} : tensor<128xf32>
  %g1 = weft.mul %f1, %s1 {weft.task = #weft.task<B, micro_batch = 1>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %a1 = weft.add %g0, %g1 {weft.accumulate, weft.task = #weft.task<B, micro_batch = 1>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %g2 = weft.mul %f2, %s2 {weft.task = #weft.task<B, micro_batch = 2>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %a2 = weft.add %a1, %g2 {weft.accumulate, weft.task = #weft.task<B, micro_batch = 2>} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  %o = weft.exp %a2 {weft.task = #weft.task<U>} : tensor<128xf32>
  %p = weft.neg %o {weft.task = #weft.task<U>} : tensor<128xf32>
  return %p : tensor<128xf32>
}
