// Op verifiers and result-type inference reject malformed IR. A failed
// inference reports the rule that failed (for a kernel op, its kernel
// specification's, named by the kernel), then MLIR's generic message.
// RUN: weft-opt %s --split-input-file --verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{add: shapes [2x3] and [4] do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @wrong_result(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>' are incompatible with return type(s) of operation 'tensor<2x5xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+2 {{reshape of 'tensor<2x3xf32>' (6 elements) to 7 elements}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.reshape %a {shape = array<i64: 7>} : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 out of range [0, 2)}}
  %0 = weft.softmax %a {axis = 2 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reduce_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{axes must be sorted and unique}}
  %0 = weft.reduce_sum %a {axes = array<i64: 1, 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+2 {{conv: channels do not match: X [1x3x8x8] f32, W [4x2x3x3], group 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = weft.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

func.func @split_sizes(%a: tensor<6xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{split: attribute 'sizes' sums to 5, dim 0 is 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:2 = weft.split %a {axis = 0 : i64, sizes = array<i64: 2, 3>} : (tensor<6xf32>) -> (tensor<2xf32>, tensor<3xf32>)
  return %0#0 : tensor<2xf32>
}

// -----

func.func @loss_reduction(%s: tensor<4x10xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{reduction must be 'mean', 'sum' or 'none', got 'max'}}
  %0, %1 = weft.softmax_cross_entropy %s, %l {reduction = "max"} : (tensor<4x10xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4x10xf32>)
  return %0 : tensor<f32>
}

// -----

func.func @dynamic_shape(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 32-bit float or 64-bit float or 16-bit float or bfloat16 type values}}
  %0 = weft.relu %a : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @attention_head_dims(%q: tensor<2x4x8xf32>, %k: tensor<2x4x6xf32>, %v: tensor<2x4x8xf32>) {
  // expected-error @+2 {{attention: expects q [.., Sq, D], k [.., Sk, D], v [.., Sk, Dv] with the same leading dims (rank 4: k and v with Hkv heads dividing q's H), got [2x4x8] f32, [2x4x6] f32, [2x4x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x6xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @attention_causal_rectangle(%q: tensor<2x4x8xf32>, %k: tensor<2x5x8xf32>, %v: tensor<2x5x8xf32>) {
  // expected-error @+2 {{attention: a causal mask needs as many queries as keys, got 4 and 5}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %k, %v {scale = 1.0 : f64, causal = true} : (tensor<2x4x8xf32>, tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @attention_ratio(%q: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'weft.attention' op dropout_ratio 1.000000e+00 not in [0, 1)}}
  %o, %s = weft.attention %q, %q, %q {scale = 1.0 : f64, dropout_ratio = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4xf32>)
  return
}

// -----

func.func @attention_layout_name(%q: tensor<2x4x3x8xf32>) {
  // expected-error @+2 {{attention: attribute 'layout' is 'bhsd', expected "bshd", "bs3hd" (or none: [.., S, D])}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %q, %q {scale = 1.0 : f64, layout = "bhsd"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @attention_layout_rank(%q: tensor<6x4x8xf32>) {
  // expected-error @+2 {{attention: layout "bshd" takes q, k and v [B, S, H, D], got [6x4x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %q, %q {scale = 1.0 : f64, layout = "bshd"} : (tensor<6x4x8xf32>, tensor<6x4x8xf32>, tensor<6x4x8xf32>) -> (tensor<6x4x8xf32>, tensor<6x4xf32>)
  return
}

// -----

// "bs3hd": [B, S, 3, H, D], not [B, S, H, D].
func.func @attention_packed_rank(%q: tensor<2x4x3x8xf32>) {
  // expected-error @+2 {{attention: layout "bs3hd" takes q, k and v as one packed [B, S, 3, H, D] type, got [2x4x3x8] f32, [2x4x3x8] f32, [2x4x3x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %q, %q {scale = 1.0 : f64, layout = "bs3hd"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

// "bs3hd": the part dim is 3 (q, k, v).
func.func @attention_packed_parts(%q: tensor<2x4x2x3x8xf32>) {
  // expected-error @+2 {{attention: layout "bs3hd" takes q, k and v as one packed [B, S, 3, H, D] type, got [2x4x2x3x8] f32, [2x4x2x3x8] f32, [2x4x2x3x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %q, %q {scale = 1.0 : f64, layout = "bs3hd"} : (tensor<2x4x2x3x8xf32>, tensor<2x4x2x3x8xf32>, tensor<2x4x2x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

// "bs3hd": one value, whose gradient is the one packed result.
func.func @attention_packed_values(%q: tensor<2x4x3x3x8xf32>, %k: tensor<2x4x3x3x8xf32>) {
  // expected-error @+1 {{'weft.attention' op layout "bs3hd" names one packed value as q, k and v}}
  %o, %s = weft.attention %q, %k, %k {scale = 1.0 : f64, layout = "bs3hd"} : (tensor<2x4x3x3x8xf32>, tensor<2x4x3x3x8xf32>, tensor<2x4x3x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

// "bs3hd": one packed gradient, not dq, dk and dv.
func.func @attention_grad_packed(%p: tensor<2x4x3x3x8xf32>, %o: tensor<2x4x3x8xf32>, %s: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'weft.attention_grad' op inferred type(s) 'tensor<2x4x3x3x8xf32>' are incompatible with return type(s) of operation}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = weft.attention_grad %p, %p, %p, %o, %s, %o {scale = 1.0 : f64, layout = "bs3hd"} : (tensor<2x4x3x3x8xf32>, tensor<2x4x3x3x8xf32>, tensor<2x4x3x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x3x4xf32>, tensor<2x4x3x8xf32>) -> (tensor<2x4x3x3x8xf32>, tensor<2x4x3x3x8xf32>, tensor<2x4x3x3x8xf32>)
  return
}

// -----

// [B, S, H, D]: k with 2 heads against q's 3.
func.func @attention_layout_heads(%q: tensor<2x4x3x8xf32>, %k: tensor<2x4x2x8xf32>) {
  // expected-error @+2 {{attention: expects q [B, Sq, H, D], k [B, Sk, Hkv, D], v [B, Sk, Hkv, Dv], Hkv dividing H, got [2x4x3x8] f32, [2x4x2x8] f32, [2x4x2x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %k, %k {scale = 1.0 : f64, layout = "bshd"} : (tensor<2x4x3x8xf32>, tensor<2x4x2x8xf32>, tensor<2x4x2x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

// [B, S, H, D]: v's 5 keys against k's 4.
func.func @attention_layout_keys(%q: tensor<2x4x3x8xf32>, %v: tensor<2x5x3x8xf32>) {
  // expected-error @+2 {{attention: expects q [B, Sq, H, D], k [B, Sk, Hkv, D], v [B, Sk, Hkv, Dv], Hkv dividing H, got [2x4x3x8] f32, [2x4x3x8] f32, [2x5x3x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %o, %s = weft.attention %q, %q, %v {scale = 1.0 : f64, layout = "bshd"} : (tensor<2x4x3x8xf32>, tensor<2x4x3x8xf32>, tensor<2x5x3x8xf32>) -> (tensor<2x4x3x8xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @attention_grad_stats(%q: tensor<2x4x8xf32>, %s: tensor<2x4xf64>) {
  // expected-error @+2 {{attention_grad: input 4 (the stats) is [2x4] f64, expected [2x4] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %dq, %dk, %dv = weft.attention_grad %q, %q, %q, %q, %s, %q {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4xf64>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  return
}

// -----

// accumulate has the input's type (the rule is the kernel specification's:
// layer_norm_grad infers its types through it, KernelContract.h).
func.func @layer_norm_grad_accumulate(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf32>, %a: tensor<8xf32>) {
  // expected-error @+2 {{layer_norm_grad: input 5 (the accumulated gradient) is [8] f32, expected [4x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %m, %x accumulate %a {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// The log-sum-exp is one per sample, [N, d...].
func.func @loss_grad_log_sum_exp(%s: tensor<4x8xf32>, %t: tensor<4xi64>, %g: tensor<f32>, %lse: tensor<4x8xf32>) {
  // expected-error @+1 {{'weft.softmax_cross_entropy_grad' op log_sum_exp must be [N, d...] as the labels 'tensor<4xi64>', got 'tensor<4x8xf32>'}}
  %d = weft.softmax_cross_entropy_grad %s, %t, %g log_sum_exp %lse : (tensor<4x8xf32>, tensor<4xi64>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @loss_log_prob_type(%s: tensor<4x8xf32>, %t: tensor<4xi64>) {
  // expected-error @+2 {{softmax_cross_entropy: attribute 'log_prob_type' is bf16, expected f32, or f32 beside 16-bit scores without class weights}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %p = weft.softmax_cross_entropy %s, %t {log_prob_type = bf16} : (tensor<4x8xf32>, tensor<4xi64>) -> (tensor<bf16>, tensor<4x8xbf16>)
  return
}

// -----

func.func @loss_log_prob_type_weights(%s: tensor<4x8xbf16>, %t: tensor<4xi64>, %w: tensor<8xbf16>) {
  // expected-error @+2 {{softmax_cross_entropy: attribute 'log_prob_type' is f32, expected bf16, or f32 beside 16-bit scores without class weights}}
  // expected-error @+1 {{failed to infer returned types}}
  %l, %p = weft.softmax_cross_entropy %s, %t, %w {log_prob_type = f32} : (tensor<4x8xbf16>, tensor<4xi64>, tensor<8xbf16>) -> (tensor<f32>, tensor<4x8xf32>)
  return
}

// -----

// add_layer_norm's add does not broadcast.
func.func @add_layer_norm_residual(%x: tensor<4x8xf32>, %r: tensor<8xf32>, %g: tensor<8xf32>) {
  // expected-error @+2 {{add_layer_norm: input 1 (the residual) is [8] f32, expected [4x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %s, %sum = weft.add_layer_norm %x, %r, %g {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>)
  return
}

// -----

// gemm_gelu_tanh_grad's pre-activation has the product's type.
func.func @gemm_gelu_tanh_grad_pre(%a: tensor<6x5xf32>, %b: tensor<5x8xf32>, %p: tensor<6x4xf32>) {
  // expected-error @+2 {{gemm_gelu_tanh_grad: input 2 (the pre-activation) is [6x4] f32, expected [6x8] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %d = weft.gemm_gelu_tanh_grad %a, %b, %p : (tensor<6x5xf32>, tensor<5x8xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  return
}

// -----

// softmax_cross_entropy_and_grad's seed is d step / d loss: the loss's
// type (here the f32 of log_prob_type, not the scores' bf16).
func.func @loss_and_grad_seed(%s: tensor<4x16xbf16>, %t: tensor<4xi64>, %g: tensor<bf16>) {
  // expected-error @+1 {{grad must have the loss's type 'tensor<f32>', got 'tensor<bf16>'}}
  %l, %lse, %d = weft.softmax_cross_entropy_and_grad %s, %t, %g {log_prob_type = f32} : (tensor<4x16xbf16>, tensor<4xi64>, tensor<bf16>) -> (tensor<f32>, tensor<4xf32>, tensor<4x16xbf16>)
  return
}

// -----

// wgrad_bias accumulates into both sums (the weight's, then the bias's),
// of the results' types, or into neither.
func.func @wgrad_bias_one_sum(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{wgrad_bias: takes the weight's and the bias's sums to accumulate into, or neither}}
  // expected-error @+1 {{failed to infer returned types}}
  %a, %b = weft.wgrad_bias %dy, %x accumulate %w : (tensor<6x4xf32>, tensor<6x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  return
}

// -----

func.func @wgrad_bias_sum_type(%dy: tensor<6x4xf32>, %x: tensor<6x3xf32>, %w: tensor<3x4xf32>, %s: tensor<4xf32>) {
  // expected-error @+2 {{wgrad_bias: input 2 (the weight gradient's sum) is [3x4] f32, expected [4x3] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %a, %b = weft.wgrad_bias %dy, %x accumulate %w, %s : (tensor<6x4xf32>, tensor<6x3xf32>, tensor<3x4xf32>, tensor<4xf32>) -> (tensor<4x3xf32>, tensor<4xf32>)
  return
}

// -----

// gather_grad accumulates into a table of its result's type.
func.func @gather_grad_sum_type(%dy: tensor<3x4xf32>, %i: tensor<3xi64>, %s: tensor<5x4xbf16>) {
  // expected-error @+1 {{accumulates into 'tensor<5x4xbf16>', not its result's type 'tensor<5x4xf32>'}}
  %t = weft.gather_grad %dy, %i accumulate %s {axis = 0 : i64, shape = array<i64: 5, 4>} : (tensor<3x4xf32>, tensor<3xi64>, tensor<5x4xbf16>) -> tensor<5x4xf32>
  return
}

// -----

// transA/transB need operands of rank >= 2.
func.func @vector(%a: tensor<4xf32>, %b: tensor<4x5xf32>) -> tensor<5xf32> {
  // expected-error @+2 {{matmul: transA needs an operand of rank >= 2, got [4] f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = weft.matmul %a, %b {transA = true} : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %y : tensor<5xf32>
}
