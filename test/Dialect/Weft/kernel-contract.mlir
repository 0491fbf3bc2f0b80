// A kernel op must have the result types its weft-run kernel's rule gives
// (KernelContract.h): IR that the op's own constraints accept but the
// runtime would refuse does not verify, and the message is weft-run's.
// RUN: weft-opt %s --split-input-file --verify-diagnostics

// exp computes in floats; the dialect's unary ops take any element type.
func.func @exp_of_integers(%x: tensor<4xi32>) {
  // expected-error @+1 {{'weft.exp' op weft-run's exp kernel refuses it: input 0 is i32, expected f32, f64, f16 or bf16}}
  %0 = weft.exp %x : tensor<4xi32>
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

// An element type weft-run has no kernel for.
func.func @f8_exp(%x: tensor<4xf8E4M3FN>) {
  // expected-error @+1 {{'weft.exp' op operand 0 has element type 'f8E4M3FN', which weft-run has no kernel for}}
  %0 = weft.exp %x : tensor<4xf8E4M3FN>
  return
}

// -----

// A well-formed op verifies: the contract adds no message of its own.
func.func @layer_norm_grad_ok(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %m, %x {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx : tensor<4x8xf32>
}
