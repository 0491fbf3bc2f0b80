// RUN: weft-opt %s --split-input-file --weft-fuse-attention --verify-diagnostics | FileCheck %s

// The gpt example's core attention as torch exports it: q (k^T), / sqrt(d),
// masked_fill(future, -inf), softmax, dropout, x v. One weft.attention on k
// itself (the transpose dies), the dropout's ratio and seed kept.
// CHECK-LABEL: func.func @gpt
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %arg0, %arg1, %arg2 {causal = true, dropout_ratio = 1.000000e-01 : f64, scale = 0.35355339664408242 : f64, seed = 7 : i64} : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>) -> (tensor<2x2x4x8xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT: return %[[O]]
func.func @gpt(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x4x8xf32>,
               %v: tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x4x8xf32>) -> tensor<2x2x8x4xf32>
  %s = weft.matmul %q, %kt : (tensor<2x2x4x8xf32>, tensor<2x2x8x4xf32>) -> tensor<2x2x4x4xf32>
  %c = weft.constant dense<2.82842708> : tensor<f32>
  %d = weft.div %s, %c : (tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  %future = weft.constant dense<[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]> : tensor<4x4xi1>
  %inf = weft.constant dense<0xFF800000> : tensor<f32>
  %m = weft.where %future, %inf, %d : (tensor<4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>) -> tensor<2x2x4x4xf32>
  %p = weft.softmax %m {axis = 3 : i64} : tensor<2x2x4x4xf32>
  %o, %mask = weft.dropout %p {ratio = 0.1 : f64, training = true, seed = 7 : i64} : (tensor<2x2x4x4xf32>) -> (tensor<2x2x4x4xf32>, tensor<2x2x4x4xi1>)
  %a = weft.matmul %o, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x8xf32>) -> tensor<2x2x4x8xf32>
  return %a : tensor<2x2x4x8xf32>
}

// -----

// torch.nn.MultiheadAttention's export scales q before the product and
// multiplies k^T made elsewhere: the scale of q becomes the op's, a new
// transpose for k; no mask, no dropout, Dv != D.
// CHECK-LABEL: func.func @scaled_q
// CHECK: %[[K:.*]] = weft.transpose %arg1 {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT: weft.attention %arg0, %[[K]], %arg2 {scale = 5.000000e-01 : f64} : (tensor<3x5x8xf32>, tensor<3x6x8xf32>, tensor<3x6x2xf32>) -> (tensor<3x5x2xf32>, tensor<3x5xf32>)
// CHECK-NOT: weft.mul
// CHECK-NOT: weft.softmax
func.func @scaled_q(%q: tensor<3x5x8xf32>, %kt: tensor<3x8x6xf32>,
                    %v: tensor<3x6x2xf32>) -> tensor<3x5x2xf32> {
  %c = weft.constant dense<0.5> : tensor<f32>
  %qs = weft.mul %q, %c : (tensor<3x5x8xf32>, tensor<f32>) -> tensor<3x5x8xf32>
  %s = weft.matmul %qs, %kt : (tensor<3x5x8xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32>
  %p = weft.softmax %s {axis = 2 : i64} : tensor<3x5x6xf32>
  %a = weft.matmul %p, %v : (tensor<3x5x6xf32>, tensor<3x6x2xf32>) -> tensor<3x5x2xf32>
  return %a : tensor<3x5x2xf32>
}

// -----

// An additive causal mask (0 on and below the diagonal, a large negative
// fill above), the scale multiplied after it.
// CHECK-LABEL: func.func @additive_mask
// CHECK-NEXT: weft.attention %arg0, %arg1, %arg2 {causal = true, scale = 2.500000e-01 : f64}
func.func @additive_mask(%q: tensor<3x3x4xf32>, %k: tensor<3x3x4xf32>,
                         %v: tensor<3x3x4xf32>) -> tensor<3x3x4xf32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<3x3x4xf32>) -> tensor<3x4x3xf32>
  %s = weft.matmul %q, %kt : (tensor<3x3x4xf32>, tensor<3x4x3xf32>) -> tensor<3x3x3xf32>
  %mask = weft.constant dense<[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %m = weft.add %s, %mask : (tensor<3x3x3xf32>, tensor<3x3xf32>) -> tensor<3x3x3xf32>
  %c = weft.constant dense<0.25> : tensor<f32>
  %d = weft.mul %c, %m : (tensor<f32>, tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
  %p = weft.softmax %d {axis = 2 : i64} : tensor<3x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<3x3x3xf32>, tensor<3x3x4xf32>) -> tensor<3x3x4xf32>
  return %a : tensor<3x3x4xf32>
}

// -----

// A padding mask is not causal: left unfused, with the reason.
// CHECK-LABEL: func.func @padding_mask
// CHECK-NOT: weft.attention
func.func @padding_mask(%q: tensor<3x3x4xf32>, %kt: tensor<3x4x3xf32>,
                        %v: tensor<3x3x4xf32>) -> tensor<3x3x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<3x3x4xf32>, tensor<3x4x3xf32>) -> tensor<3x3x3xf32>
  %pad = weft.constant dense<[false, false, true]> : tensor<3xi1>
  %inf = weft.constant dense<0xFF800000> : tensor<f32>
  %m = weft.where %pad, %inf, %s : (tensor<3xi1>, tensor<f32>, tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
  // expected-warning@+1 {{core attention not fused (--flash-attention): its mask is not causal}}
  %p = weft.softmax %m {axis = 2 : i64} : tensor<3x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<3x3x3xf32>, tensor<3x3x4xf32>) -> tensor<3x3x4xf32>
  return %a : tensor<3x3x4xf32>
}

// -----

// A finite fill that does not zero the probability (-100) is not a mask
// the fused kernel computes exactly.
// CHECK-LABEL: func.func @weak_fill
// CHECK-NOT: weft.attention
func.func @weak_fill(%q: tensor<2x2x4xf32>, %kt: tensor<2x4x2xf32>,
                     %v: tensor<2x2x4xf32>) -> tensor<2x2x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x4xf32>, tensor<2x4x2xf32>) -> tensor<2x2x2xf32>
  %future = weft.constant dense<[[false, true], [false, false]]> : tensor<2x2xi1>
  %fill = weft.constant dense<-100.0> : tensor<f32>
  %m = weft.where %future, %fill, %s : (tensor<2x2xi1>, tensor<f32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  // expected-warning@+1 {{its mask is not causal}}
  %p = weft.softmax %m {axis = 2 : i64} : tensor<2x2x2xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x2xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %a : tensor<2x2x4xf32>
}

// -----

// The scores are also returned: fusing would lose them.
// CHECK-LABEL: func.func @scores_used
// CHECK-NOT: weft.attention
func.func @scores_used(%q: tensor<2x2x4xf32>, %kt: tensor<2x4x2xf32>,
                       %v: tensor<2x2x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x2x2xf32>) {
  %s = weft.matmul %q, %kt : (tensor<2x2x4xf32>, tensor<2x4x2xf32>) -> tensor<2x2x2xf32>
  %c = weft.constant dense<2.0> : tensor<f32>
  %d = weft.div %s, %c : (tensor<2x2x2xf32>, tensor<f32>) -> tensor<2x2x2xf32>
  // expected-warning@+1 {{a score the softmax reads is used elsewhere}}
  %p = weft.softmax %d {axis = 2 : i64} : tensor<2x2x2xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x2xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %a, %d : tensor<2x2x4xf32>, tensor<2x2x2xf32>
}

// -----

// A softmax over the queries is not attention as the kernel computes it.
// CHECK-LABEL: func.func @query_softmax
// CHECK-NOT: weft.attention
func.func @query_softmax(%q: tensor<2x2x4xf32>, %kt: tensor<2x4x2xf32>,
                         %v: tensor<2x2x4xf32>) -> tensor<2x2x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x4xf32>, tensor<2x4x2xf32>) -> tensor<2x2x2xf32>
  // expected-warning@+1 {{its softmax is not over the keys}}
  %p = weft.softmax %s {axis = 1 : i64} : tensor<2x2x2xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x2xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %a : tensor<2x2x4xf32>
}

// -----

// Heads broadcast over q (multi-query attention) are not fused.
// CHECK-LABEL: func.func @broadcast_heads
// CHECK-NOT: weft.attention
func.func @broadcast_heads(%q: tensor<4x3x8xf32>, %kt: tensor<1x8x3xf32>,
                           %v: tensor<1x3x8xf32>) -> tensor<4x3x8xf32> {
  %s = weft.matmul %q, %kt : (tensor<4x3x8xf32>, tensor<1x8x3xf32>) -> tensor<4x3x3xf32>
  // expected-warning@+1 {{q, k and v do not all have the scores' batch and head dims}}
  %p = weft.softmax %s {axis = 2 : i64} : tensor<4x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<4x3x3xf32>, tensor<1x3x8xf32>) -> tensor<4x3x8xf32>
  return %a : tensor<4x3x8xf32>
}

// -----

// nn.MultiheadAttention's attn_mask as a model buffer (an argument: its
// values are not the compile's to see), or a padding mask from the input:
// the op's additive bias, broadcast over the batch of (batch, head) pairs.
// CHECK-LABEL: func.func @mask_argument
// CHECK: weft.attention %arg0, %{{.*}}, %arg2 bias %arg3 {scale = 1.000000e+00 : f64} : (tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<1x3x3xf32>)
// CHECK-NOT: weft.softmax
func.func @mask_argument(%q: tensor<4x3x8xf32>, %kt: tensor<4x8x3xf32>,
                         %v: tensor<4x3x8xf32>, %mask: tensor<1x3x3xf32>)
    -> tensor<4x3x8xf32> {
  %s = weft.matmul %q, %kt : (tensor<4x3x8xf32>, tensor<4x8x3xf32>) -> tensor<4x3x3xf32>
  %m = weft.add %s, %mask : (tensor<4x3x3xf32>, tensor<1x3x3xf32>) -> tensor<4x3x3xf32>
  %p = weft.softmax %m {axis = 2 : i64} : tensor<4x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<4x3x3xf32>, tensor<4x3x8xf32>) -> tensor<4x3x8xf32>
  return %a : tensor<4x3x8xf32>
}

// -----

// A padding mask [B, 1, 1, Sk] from the inputs beside a causal one: causal
// stays the attribute, the padding mask the bias.
// CHECK-LABEL: func.func @padding_and_causal
// CHECK: weft.attention %arg0, %{{.*}}, %arg2 bias %arg3 {causal = true, scale = 1.000000e+00 : f64} : (tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x2x3x4xf32>, tensor<2x1x1x3xf32>)
func.func @padding_and_causal(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>,
                              %v: tensor<2x2x3x4xf32>, %pad: tensor<2x1x1x3xf32>)
    -> tensor<2x2x3x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %causal = weft.constant dense<[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %c = weft.add %s, %causal : (tensor<2x2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x2x3x3xf32>
  %m = weft.add %c, %pad : (tensor<2x2x3x3xf32>, tensor<2x1x1x3xf32>) -> tensor<2x2x3x3xf32>
  %p = weft.softmax %m {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %a : tensor<2x2x3x4xf32>
}

// -----

// A bias per head (ALiBi's slopes) has no fused form; one a parameter
// reaches (a learned relative-position bias) needs a gradient the op does
// not take; two masks are one too many.
// CHECK-LABEL: func.func @per_head_mask
// CHECK-NOT: weft.attention
func.func @per_head_mask(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>,
                         %v: tensor<2x2x3x4xf32>, %bias: tensor<1x2x3x3xf32>)
    -> tensor<2x2x3x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %m = weft.add %s, %bias : (tensor<2x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  // expected-warning@+1 {{its additive mask varies by head (a per-head bias has no fused form)}}
  %p = weft.softmax %m {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %a : tensor<2x2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @learned_bias
// CHECK-NOT: weft.attention
func.func @learned_bias(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>,
                        %v: tensor<2x2x3x4xf32>,
                        %w: tensor<3x3xf32> {weft.param = "rel_bias"})
    -> tensor<2x2x3x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %b = weft.neg %w : tensor<3x3xf32>
  %m = weft.add %s, %b : (tensor<2x2x3x3xf32>, tensor<3x3xf32>) -> tensor<2x2x3x3xf32>
  // expected-warning@+1 {{its additive mask depends on parameter 'rel_bias' (a learned bias: the fused op takes no gradient for its bias)}}
  %p = weft.softmax %m {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %a : tensor<2x2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @two_masks
// CHECK-NOT: weft.attention
func.func @two_masks(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>,
                     %v: tensor<2x2x3x4xf32>, %a1: tensor<2x1x1x3xf32>,
                     %a2: tensor<2x1x1x3xf32>) -> tensor<2x2x3x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %m1 = weft.add %s, %a1 : (tensor<2x2x3x3xf32>, tensor<2x1x1x3xf32>) -> tensor<2x2x3x3xf32>
  %m2 = weft.add %m1, %a2 : (tensor<2x2x3x3xf32>, tensor<2x1x1x3xf32>) -> tensor<2x2x3x3xf32>
  // expected-warning@+1 {{it adds two masks to its scores}}
  %p = weft.softmax %m2 {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %a : tensor<2x2x3x4xf32>
}

// -----

// A softmax outside attention (a classifier's) is no concern of the pass.
// CHECK-LABEL: func.func @classifier
// CHECK: weft.softmax
func.func @classifier(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %p = weft.softmax %x {axis = 1 : i64} : tensor<4x8xf32>
  return %p : tensor<4x8xf32>
}

// -----

// torch exports k.transpose(1, 2).transpose(-2, -1) of a [b, s, h, d] k as
// one transpose [0, 2, 3, 1]: k for the fused op is one transpose [0, 2, 1,
// 3] of it (the two compose), not a transpose of the transpose.
// CHECK-LABEL: func.func @composed_keys
// CHECK-NEXT: %[[K:.*]] = weft.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x3x8xf32>) -> tensor<2x3x4x8xf32>
// CHECK-NEXT: weft.attention %arg0, %[[K]], %arg2 {scale = 1.000000e+00 : f64}
// CHECK-NOT: weft.transpose
func.func @composed_keys(%q: tensor<2x3x4x8xf32>, %k: tensor<2x4x3x8xf32>,
                         %v: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x3x8xf32>) -> tensor<2x3x8x4xf32>
  %s = weft.matmul %q, %kt : (tensor<2x3x4x8xf32>, tensor<2x3x8x4xf32>) -> tensor<2x3x4x4xf32>
  %p = weft.softmax %s {axis = 3 : i64} : tensor<2x3x4x4xf32>
  %a = weft.matmul %p, %v : (tensor<2x3x4x4xf32>, tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %a : tensor<2x3x4x8xf32>
}

// -----

// Hugging Face's GPT-2: identity casts around the softmax, the scale
// computed from constants (0 + pow(d, 0.5)), where(past, scores,
// finfo.min) from a [1, 1, s, s] buffer, a dropout of ratio 0. All fused;
// the scale's arithmetic dies with the scores.
// CHECK-LABEL: func.func @hf_gpt2
// CHECK-NEXT: %[[K:.*]] = weft.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %arg0, %[[K]], %arg2 {causal = true, dropout_ratio = 0.000000e+00 : f64, scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @hf_gpt2(%q: tensor<1x2x3x4xf32>, %k: tensor<1x3x2x4xf32>,
                   %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x3x2x4xf32>) -> tensor<1x2x4x3xf32>
  %s = weft.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %d = weft.constant dense<4.0> : tensor<f32>
  %half = weft.constant dense<0.5> : tensor<f32>
  %root = weft.pow %d, %half : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %zero = weft.constant dense<0.0> : tensor<f32>
  %scale = weft.add %zero, %root : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %div = weft.div %s, %scale : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %same = weft.cast %div {to = f32} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %past = weft.constant dense<[[[[true, false, false], [true, true, false], [true, true, true]]]]> : tensor<1x1x3x3xi1>
  %min = weft.constant dense<-3.40282347E+38> : tensor<f32>
  %m = weft.where %past, %same, %min : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = weft.softmax %m {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %p32 = weft.cast %p {to = f32} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o, %mask = weft.dropout %p32 {ratio = 0.0 : f64, training = true} : (tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xi1>)
  %a = weft.matmul %o, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %a : tensor<1x2x3x4xf32>
}

// -----

// A mask too large for the importer to fold arrives as a view of the
// model's buffer: identity slices and casts of it. The pass reads the
// constant through them (here the top-left 3 x 3 of a 5 x 5 buffer).
// CHECK-LABEL: func.func @mask_view
// CHECK-NEXT: weft.attention %arg0, %arg1, %arg2 {causal = true, scale = 1.000000e+00 : f64}
func.func @mask_view(%q: tensor<2x3x4xf32>, %k: tensor<2x3x4xf32>,
                     %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %kt = weft.transpose %k {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %s = weft.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %buffer = weft.constant dense<[[false, true, true, true, true], [false, false, true, true, true], [false, false, false, true, true], [false, false, false, false, true], [false, false, false, false, false]]> : tensor<5x5xi1>
  %rows = weft.slice %buffer {ends = array<i64: 3, 5>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<5x5xi1>) -> tensor<3x5xi1>
  %view = weft.slice %rows {ends = array<i64: 3, 3>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<3x5xi1>) -> tensor<3x3xi1>
  %future = weft.cast %view {to = i1} : (tensor<3x3xi1>) -> tensor<3x3xi1>
  %inf = weft.constant dense<0xFF800000> : tensor<f32>
  %m = weft.where %future, %inf, %s : (tensor<3x3xi1>, tensor<f32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  %p = weft.softmax %m {axis = 2 : i64} : tensor<2x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %a : tensor<2x3x4xf32>
}

// -----

// The same buffer viewed from its second row is no causal mask (row i of
// the view hides the columns after i + 1): the view's offsets count.
// CHECK-LABEL: func.func @mask_view_offset
// CHECK-NOT: weft.attention
func.func @mask_view_offset(%q: tensor<2x3x4xf32>, %kt: tensor<2x4x3xf32>,
                            %v: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
  %buffer = weft.constant dense<[[false, true, true, true, true], [false, false, true, true, true], [false, false, false, true, true], [false, false, false, false, true], [false, false, false, false, false]]> : tensor<5x5xi1>
  %future = weft.slice %buffer {ends = array<i64: 4, 3>, starts = array<i64: 1, 0>, steps = array<i64: 1, 1>} : (tensor<5x5xi1>) -> tensor<3x3xi1>
  %inf = weft.constant dense<0xFF800000> : tensor<f32>
  %m = weft.where %future, %inf, %s : (tensor<3x3xi1>, tensor<f32>, tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
  // expected-warning@+1 {{its mask is not causal}}
  %p = weft.softmax %m {axis = 2 : i64} : tensor<2x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %a : tensor<2x3x4xf32>
}

// -----

// An additive constant that is neither causal nor zero (a view of one
// here): the op's bias, reshaped to the scores' rank.
// CHECK-LABEL: func.func @additive_view_not_causal
// CHECK: %[[B:.*]] = weft.reshape %{{.*}} {shape = array<i64: 1, 2, 2>}
// CHECK: weft.attention %arg0, %{{.*}}, %arg2 bias %[[B]]
func.func @additive_view_not_causal(%q: tensor<2x2x4xf32>, %kt: tensor<2x4x2xf32>,
                                    %v: tensor<2x2x4xf32>) -> tensor<2x2x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x4xf32>, tensor<2x4x2xf32>) -> tensor<2x2x2xf32>
  %buffer = weft.constant dense<[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %mask = weft.slice %buffer {ends = array<i64: 2, 2>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : (tensor<3x3xf32>) -> tensor<2x2xf32>
  %m = weft.add %s, %mask : (tensor<2x2x2xf32>, tensor<2x2xf32>) -> tensor<2x2x2xf32>
  %p = weft.softmax %m {axis = 2 : i64} : tensor<2x2x2xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x2xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %a : tensor<2x2x4xf32>
}

// -----

// Grouped-query attention as Hugging Face's repeat_kv writes it: 2 kv heads
// unsqueezed, expanded to 4 query heads each and merged. The op reads the
// kv heads themselves; the copies die.
// CHECK-LABEL: func.func @grouped_query
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f64} : (tensor<2x8x4x16xf32>, tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> (tensor<2x8x4x16xf32>, tensor<2x8x4xf32>)
// CHECK-NEXT: return %[[O]]
func.func @grouped_query(%q: tensor<2x8x4x16xf32>, %k: tensor<2x2x4x16xf32>,
                         %v: tensor<2x2x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %k1 = weft.reshape %k {shape = array<i64: 2, 2, 1, 4, 16>} : (tensor<2x2x4x16xf32>) -> tensor<2x2x1x4x16xf32>
  %k2 = weft.expand %k1 {shape = array<i64: 2, 2, 4, 4, 16>} : (tensor<2x2x1x4x16xf32>) -> tensor<2x2x4x4x16xf32>
  %k3 = weft.reshape %k2 {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x2x4x4x16xf32>) -> tensor<2x8x4x16xf32>
  %v1 = weft.reshape %v {shape = array<i64: 2, 2, 1, 4, 16>} : (tensor<2x2x4x16xf32>) -> tensor<2x2x1x4x16xf32>
  %v2 = weft.expand %v1 {shape = array<i64: 2, 2, 4, 4, 16>} : (tensor<2x2x1x4x16xf32>) -> tensor<2x2x4x4x16xf32>
  %v3 = weft.reshape %v2 {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x2x4x4x16xf32>) -> tensor<2x8x4x16xf32>
  %kt = weft.transpose %k3 {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x8x4x16xf32>) -> tensor<2x8x16x4xf32>
  %s = weft.matmul %q, %kt : (tensor<2x8x4x16xf32>, tensor<2x8x16x4xf32>) -> tensor<2x8x4x4xf32>
  %c = weft.constant dense<4.0> : tensor<f32>
  %d = weft.div %s, %c : (tensor<2x8x4x4xf32>, tensor<f32>) -> tensor<2x8x4x4xf32>
  %p = weft.softmax %d {axis = 3 : i64} : tensor<2x8x4x4xf32>
  %a = weft.matmul %p, %v3 : (tensor<2x8x4x4xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return %a : tensor<2x8x4x16xf32>
}

// -----

// A repeat along another dim than a new group dim is no repeat_kv (here
// the heads are tiled [kv0 kv1 kv0 kv1 ..], not grouped): the attention
// reads the copies.
// CHECK-LABEL: func.func @tiled_heads_are_not_grouped
// CHECK: %[[K:.*]] = weft.reshape %{{.*}} {shape = array<i64: 2, 8, 4, 16>}
// CHECK: weft.attention %arg0, %[[K]], %{{.*}} {scale
func.func @tiled_heads_are_not_grouped(%q: tensor<2x8x4x16xf32>, %k: tensor<2x2x4x16xf32>,
                                       %v: tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %k1 = weft.reshape %k {shape = array<i64: 2, 1, 2, 4, 16>} : (tensor<2x2x4x16xf32>) -> tensor<2x1x2x4x16xf32>
  %k2 = weft.expand %k1 {shape = array<i64: 2, 4, 2, 4, 16>} : (tensor<2x1x2x4x16xf32>) -> tensor<2x4x2x4x16xf32>
  %k3 = weft.reshape %k2 {shape = array<i64: 2, 8, 4, 16>} : (tensor<2x4x2x4x16xf32>) -> tensor<2x8x4x16xf32>
  %kt = weft.transpose %k3 {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x8x4x16xf32>) -> tensor<2x8x16x4xf32>
  %s = weft.matmul %q, %kt : (tensor<2x8x4x16xf32>, tensor<2x8x16x4xf32>) -> tensor<2x8x4x4xf32>
  %p = weft.softmax %s {axis = 3 : i64} : tensor<2x8x4x4xf32>
  %a = weft.matmul %p, %v : (tensor<2x8x4x4xf32>, tensor<2x8x4x16xf32>) -> tensor<2x8x4x16xf32>
  return %a : tensor<2x8x4x16xf32>
}

// -----

// torch 2's decomposition of scaled_dot_product_attention (the dynamo
// exporter, as transformers 5 runs it): q and k^T each scaled by
// sqrt(scale), an additive causal mask of the dtype's lowest value
// broadcast over the heads, and the guard where(isnan(p), 0, p) after the
// softmax, which no row of a causal mask trips: one op, scale 0.5 x 0.5.
// CHECK-LABEL: func.func @sdpa_decomposed
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %arg0, %arg1, %arg2 {causal = true, scale = 2.500000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @sdpa_decomposed(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x3x4xf32>,
                           %v: tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32> {
  %c = weft.constant dense<0.5> : tensor<f32>
  %qs = weft.mul %q, %c : (tensor<2x2x3x4xf32>, tensor<f32>) -> tensor<2x2x3x4xf32>
  %kt = weft.transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x3x4xf32>) -> tensor<2x2x4x3xf32>
  %c2 = weft.constant dense<0.5> : tensor<f32>
  %ks = weft.mul %kt, %c2 : (tensor<2x2x4x3xf32>, tensor<f32>) -> tensor<2x2x4x3xf32>
  %s = weft.matmul %qs, %ks : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %mask = weft.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]], [[[0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0]]]]> : tensor<2x1x3x3xf32>
  %m = weft.add %s, %mask : (tensor<2x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<2x2x3x3xf32>
  %p = weft.softmax %m {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %nan = weft.is_nan %p : (tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xi1>
  %zero = weft.constant dense<0.0> : tensor<f32>
  %g = weft.where %nan, %zero, %p : (tensor<2x2x3x3xi1>, tensor<f32>, tensor<2x2x3x3xf32>) -> tensor<2x2x3x3xf32>
  %a = weft.matmul %g, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %a : tensor<2x2x3x4xf32>
}

// -----

// A mask hiding a whole row, which the guard is for: the op's bias, and
// the guard goes, as the op gives such a row 0 itself.
// CHECK-LABEL: func.func @guard_not_causal
// CHECK: weft.attention %arg0, %{{.*}}, %arg2 bias %{{.*}}
// CHECK-NOT: weft.is_nan
func.func @guard_not_causal(%q: tensor<1x1x2x4xf32>, %kt: tensor<1x1x4x2xf32>,
                            %v: tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<1x1x2x4xf32>, tensor<1x1x4x2xf32>) -> tensor<1x1x2x2xf32>
  %mask = weft.constant dense<[[[[0xFF800000, 0xFF800000], [0.0, 0.0]]]]> : tensor<1x1x2x2xf32>
  %m = weft.add %s, %mask : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %p = weft.softmax %m {axis = 3 : i64} : tensor<1x1x2x2xf32>
  %nan = weft.is_nan %p : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xi1>
  %zero = weft.constant dense<0.0> : tensor<f32>
  %g = weft.where %nan, %zero, %p : (tensor<1x1x2x2xi1>, tensor<f32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  %a = weft.matmul %g, %v : (tensor<1x1x2x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  return %a : tensor<1x1x2x4xf32>
}

// -----

// An additive mask of zeros hides nothing (Hugging Face's BERT builds one
// from an attention mask of ones, folded at import): bidirectional
// attention, fused, the mask gone.
// CHECK-LABEL: func.func @zero_mask
// CHECK-NEXT: %[[K:.*]] = weft.transpose %arg1
// CHECK-NEXT: %[[O:.*]], %{{.*}} = weft.attention %arg0, %[[K]], %arg2 {scale = 5.000000e-01 : f64}
// CHECK-NEXT: return %[[O]]
func.func @zero_mask(%q: tensor<2x2x3x4xf32>, %kt: tensor<2x2x4x3xf32>,
                     %v: tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32> {
  %s = weft.matmul %q, %kt : (tensor<2x2x3x4xf32>, tensor<2x2x4x3xf32>) -> tensor<2x2x3x3xf32>
  %c = weft.constant dense<0.5> : tensor<f32>
  %d = weft.mul %s, %c : (tensor<2x2x3x3xf32>, tensor<f32>) -> tensor<2x2x3x3xf32>
  %mask = weft.constant dense<0.0> : tensor<2x1x1x3xf32>
  %m = weft.add %d, %mask : (tensor<2x2x3x3xf32>, tensor<2x1x1x3xf32>) -> tensor<2x2x3x3xf32>
  %p = weft.softmax %m {axis = 3 : i64} : tensor<2x2x3x3xf32>
  %a = weft.matmul %p, %v : (tensor<2x2x3x3xf32>, tensor<2x2x3x4xf32>) -> tensor<2x2x3x4xf32>
  return %a : tensor<2x2x3x4xf32>
}
