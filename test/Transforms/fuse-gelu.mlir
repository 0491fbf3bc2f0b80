// RUN: weft-opt %s --split-input-file --weft-fuse-gelu | FileCheck %s

// torch.nn.functional.gelu as torch exports it at opset 17.
// CHECK-LABEL: func.func @torch_gelu
// CHECK-NEXT: %[[G:.*]] = weft.gelu %arg0 : tensor<4x8xf32>
// CHECK-NEXT: weft.reduce_sum %[[G]]
// CHECK-NOT: weft.erf
func.func @torch_gelu(%x: tensor<4x8xf32> {weft.param = "x"}) -> tensor<f32> {
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f32>
  %t = weft.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %l = weft.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The BERT spelling: x * 0.5 * (1 + erf(x * 1/sqrt(2))), operands swapped.
// CHECK-LABEL: func.func @bert_gelu
// CHECK-NEXT: %[[G:.*]] = weft.gelu %arg0 : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @bert_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = weft.constant dense<0.5> : tensor<f32>
  %h = weft.mul %half, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = weft.constant dense<0.707106769> : tensor<f32>
  %t = weft.mul %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = weft.mul %a, %h : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Not GELU: the erf's argument is scaled by 2, not 1/sqrt(2).
// CHECK-LABEL: func.func @wrong_scale
// CHECK-NOT: weft.gelu
// CHECK: weft.erf
func.func @wrong_scale(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = weft.constant dense<2.0> : tensor<f32>
  %t = weft.div %x, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// An intermediate that something else reads stays: fusing would compute it
// twice. The chain is left alone.
// CHECK-LABEL: func.func @shared_intermediate
// CHECK-NOT: weft.gelu
// CHECK: weft.erf
func.func @shared_intermediate(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f32>
  %t = weft.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y, %a : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An f16 graph: the literals are f16-rounded (sqrt(2) is 1.4140625, 4e-4 off),
// which f16's rounding allows.
// CHECK-LABEL: func.func @f16_gelu
// CHECK-NEXT: %[[G:.*]] = weft.gelu %arg0 : tensor<4x8xf16>
// CHECK-NEXT: return %[[G]]
func.func @f16_gelu(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f16>
  %t = weft.div %x, %sqrt2 : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %e = weft.erf %t : tensor<4x8xf16>
  %one = weft.constant dense<1.0> : tensor<f16>
  %a = weft.add %e, %one : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %m = weft.mul %x, %a : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %half = weft.constant dense<0.5> : tensor<f16>
  %y = weft.mul %m, %half : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// The same 4e-4 error in an f32 graph is not GELU: f32 constants are
// compared within f32's rounding.
// CHECK-LABEL: func.func @f32_with_f16_literal
// CHECK-NOT: weft.gelu
// CHECK: weft.erf
func.func @f32_with_f16_literal(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = weft.constant dense<1.4140625> : tensor<f32>
  %t = weft.div %x, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// bf16, x * Phi(x) with Phi = (erf(x * 1/sqrt(2)) + 1) / 2: the division by
// 2 is a product by 0.5; 1/sqrt(2) in bf16 is 0.70703125.
// CHECK-LABEL: func.func @bf16_x_times_phi
// CHECK-NEXT: %[[G:.*]] = weft.gelu %arg0 : tensor<4x8xbf16>
// CHECK-NEXT: return %[[G]]
func.func @bf16_x_times_phi(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %c = weft.constant dense<0.707106769> : tensor<bf16>
  %t = weft.mul %c, %x : (tensor<bf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %e = weft.erf %t : tensor<4x8xbf16>
  %one = weft.constant dense<1.0> : tensor<bf16>
  %a = weft.add %e, %one : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %two = weft.constant dense<2.0> : tensor<bf16>
  %phi = weft.div %a, %two : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
  %y = weft.mul %x, %phi : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// Odd symmetry: 0.5 x (1 - erf(-x / sqrt(2))) is GELU too.
// CHECK-LABEL: func.func @negated_argument
// CHECK-NEXT: %[[G:.*]] = weft.gelu %arg0 : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @negated_argument(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %n = weft.neg %x : tensor<4x8xf32>
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f32>
  %t = weft.div %n, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.sub %one, %e : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %h = weft.mul %half, %a : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = weft.mul %h, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Two inputs: x * 0.5 * (1 + erf(z / sqrt(2))) is not a function of x alone.
// CHECK-LABEL: func.func @two_inputs
// CHECK-NOT: weft.gelu
// CHECK: weft.erf
func.func @two_inputs(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sqrt2 = weft.constant dense<1.41421354> : tensor<f32>
  %t = weft.div %z, %sqrt2 : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %e = weft.erf %t : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %e, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Hugging Face's NewGELUActivation (GPT-2's gelu_new):
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))).
// CHECK-LABEL: func.func @hf_gelu_new
// CHECK-NEXT: %[[G:.*]] = weft.gelu_tanh %arg0 : tensor<4x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @hf_gelu_new(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = weft.constant dense<0.5> : tensor<f32>
  %hx = weft.mul %half, %x : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %three = weft.constant dense<3.0> : tensor<f32>
  %cube = weft.pow %x, %three : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %c = weft.constant dense<0.044715> : tensor<f32>
  %cc = weft.mul %c, %cube : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = weft.add %x, %cc : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = weft.constant dense<0.797884583> : tensor<f32>
  %u = weft.mul %k, %s : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %t = weft.tanh %u : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %one, %t : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = weft.mul %hx, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Megatron-LM's bias_gelu, factored, in f16:
// x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x))).
// CHECK-LABEL: func.func @megatron_bias_gelu_f16
// CHECK-NEXT: %[[G:.*]] = weft.gelu_tanh %arg0 : tensor<4x8xf16>
// CHECK-NEXT: return %[[G]]
func.func @megatron_bias_gelu_f16(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %half = weft.constant dense<0.5> : tensor<f16>
  %hx = weft.mul %x, %half : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %k = weft.constant dense<0.79788456> : tensor<f16>
  %kx = weft.mul %k, %x : (tensor<f16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %c = weft.constant dense<0.044715> : tensor<f16>
  %cx = weft.mul %c, %x : (tensor<f16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %cxx = weft.mul %cx, %x : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %one = weft.constant dense<1.0> : tensor<f16>
  %p = weft.add %one, %cxx : (tensor<f16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %u = weft.mul %kx, %p : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %t = weft.tanh %u : tensor<4x8xf16>
  %a = weft.add %t, %one : (tensor<4x8xf16>, tensor<f16>) -> tensor<4x8xf16>
  %y = weft.mul %hx, %a : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// Not gelu_new: the cubic coefficient is 0.05, not 0.044715.
// CHECK-LABEL: func.func @wrong_cubic
// CHECK-NOT: weft.gelu
// CHECK: weft.tanh
func.func @wrong_cubic(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %xx = weft.mul %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %cube = weft.mul %xx, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = weft.constant dense<0.05> : tensor<f32>
  %cc = weft.mul %cube, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %s = weft.add %cc, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %k = weft.constant dense<0.797884583> : tensor<f32>
  %u = weft.mul %s, %k : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %t = weft.tanh %u : tensor<4x8xf32>
  %one = weft.constant dense<1.0> : tensor<f32>
  %a = weft.add %t, %one : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %m = weft.mul %a, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %m, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A plain tanh activation stays a tanh.
// CHECK-LABEL: func.func @plain_tanh
// CHECK-NEXT: weft.tanh
func.func @plain_tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = weft.tanh %x : tensor<4x8xf32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %y = weft.mul %t, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
