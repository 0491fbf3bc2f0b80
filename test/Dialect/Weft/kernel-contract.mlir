// A kernel op must have the result types its weft-run kernel's rule gives
// (KernelContract.h): IR that the op's own constraints accept but the
// runtime would refuse does not verify, and the message is weft-run's.
// RUN: weft-opt %s --split-input-file --verify-diagnostics

// The dialect's operand types are weft-run's dtype sets (Weft_TensorOf):
// exp computes in floats, and an integer operand is the dialect's error.
func.func @exp_of_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{'weft.exp' op operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or 16-bit float or bfloat16 type values, but got 'tensor<4xi32>'}}
  %0 = weft.exp %x : tensor<4xi32>
  return
}

// -----

// A relation between operands is the kernel's rule: layer_norm's scale is
// the input's dtype, or f32 beside a 16-bit input, never 16-bit beside f32.
func.func @layer_norm_f16_scale(%x: tensor<4x8xf32>, %s: tensor<8xf16>) {
  // expected-error @+2 {{layer_norm: input 1 is f16, expected f32 (the input's dtype)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %r = weft.layer_norm %x, %s {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf16>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return
}

// -----

// layer_norm_grad infers its result types by its kernel's rule
// (Weft_KernelTypedOp): the statistics of a layer norm are f32 for every
// input dtype, and the message is the rule's.
func.func @layer_norm_grad_f16_mean(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf16>, %r: tensor<4x1xf32>) {
  // expected-error @+2 {{layer_norm_grad: input 2 (the mean) is [4x1] f16, expected [4x1] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %r, %x {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf16>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// An element type weft-run has no kernel for, where the dialect admits any
// (data movement).
func.func @f8_transpose(%x: tensor<4x2xf8E4M3FN>) {
  // expected-error @+2 {{transpose: operand 0 has element type 'f8E4M3FN', which weft-run has no kernel for}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x2xf8E4M3FN>) -> tensor<2x4xf8E4M3FN>
  return
}

// -----

// A well-formed op verifies: the contract adds no message of its own.
func.func @layer_norm_grad_ok(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %m, %x {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx : tensor<4x8xf32>
}

// -----

// An op whose types its kernel's rule infers (KernelTypedResults) is held to
// the rule by type inference; written with other result types (generic form,
// as a pass could build it), it does not verify.
func.func @transpose_with_other_result_type(%x: tensor<4x8xf32>) {
  // expected-error @+2 {{'weft.transpose' op inferred type(s) 'tensor<8x4xf32>' are incompatible with return type(s) of operation 'tensor<4x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "weft.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}
