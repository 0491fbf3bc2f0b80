// RUN: weft-opt %s --split-input-file --verify-diagnostics --weft-simulate-pipeline
// RUN: not weft-opt %s --split-input-file --weft-simulate-pipeline=print 2>&1 >/dev/null | FileCheck %s

// A hand-written wrong schedule: each stage waits for the other's tensor
// before sending its own, so neither send is ever posted.
func.func @stage0(%x: tensor<4xf32> {weft.input = "x"}) attributes {weft.stage = 0 : i64} {
  %b, %r = weft.irecv {peer = 1 : i64, tag = 1 : i64} : tensor<4xf32>
  // expected-error @+1 {{deadlock: stage 0 blocks at its op 1 (wait_recv of tag 1 from stage 1, task F0): the matching isend is never posted; stage 1 is itself blocked at its op 1 (wait_recv of tag 0 from stage 0)}}
  %y = weft.wait_recv %r, %b : tensor<4xf32>
  %s = weft.isend %x {peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  weft.wait_send %s, %x : tensor<4xf32>
  return
}
func.func @stage1(%x: tensor<4xf32> {weft.input = "x"}) attributes {weft.stage = 1 : i64} {
  %b, %r = weft.irecv {peer = 0 : i64, tag = 0 : i64} : tensor<4xf32>
  %y = weft.wait_recv %r, %b : tensor<4xf32>
  %s = weft.isend %x {peer = 0 : i64, tag = 1 : i64} : tensor<4xf32>
  weft.wait_send %s, %x : tensor<4xf32>
  return
}

// -----

// The same exchange, correctly ordered on stage 1 (send first): it
// completes (the first chunk fails, hence `not`): each side waits for one
// transfer of 16 bytes, 10 us latency + 4 ns, one after the other.
// CHECK: pipeline: stages=2 step_us=20.0 bubble=1.0000
// CHECK: pipeline: stage 0 busy_us=0.0
func.func @stage0(%x: tensor<4xf32> {weft.input = "x"}) attributes {weft.stage = 0 : i64} {
  %b, %r = weft.irecv {peer = 1 : i64, tag = 1 : i64} : tensor<4xf32>
  %y = weft.wait_recv %r, %b : tensor<4xf32>
  %s = weft.isend %x {peer = 1 : i64, tag = 0 : i64} : tensor<4xf32>
  weft.wait_send %s, %x : tensor<4xf32>
  return
}
func.func @stage1(%x: tensor<4xf32> {weft.input = "x"}) attributes {weft.stage = 1 : i64} {
  %s = weft.isend %x {peer = 0 : i64, tag = 1 : i64} : tensor<4xf32>
  %b, %r = weft.irecv {peer = 0 : i64, tag = 0 : i64} : tensor<4xf32>
  %y = weft.wait_recv %r, %b : tensor<4xf32>
  weft.wait_send %s, %x : tensor<4xf32>
  return
}
