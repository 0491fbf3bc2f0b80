//===- WeftTransformerOps.td - the Llama block's fused ops ---*- tablegen -*-===//
//
// The fused ops of transformer blocks beside attention (WeftAttentionOps.td):
// GPT's residual add and LayerNorm in one kernel, and the Llama block's
// gated MLP activation (SwiGLU, GeGLU), rotary position embeddings and
// RMSNorm. ONNX before opset 22/23 has none of the latter, so exporters
// write chains; weft-fuse-glu, weft-fuse-rotary and weft-fuse-rms-norm make
// the ops from them. Their gradients are in WeftGradOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTTRANSFORMEROPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTTRANSFORMEROPS_TD

def Weft_GluOp : Weft_KernelTypedOp<"glu", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = CustomFlopRule;
  let summary = "Gated linear unit: `act(gate) * up` (SwiGLU, GeGLU).";
  let description = [{
    Shazeer 2020, "GLU Variants Improve Transformer": the MLP of Llama,
    Mistral and Qwen2 is `down(silu(gate(x)) * up(x))` (SwiGLU), Gemma's
    and T5 v1.1's `gelu(gate(x)) * up(x)` (GeGLU). `activation` is "silu"
    (`x * sigmoid(x)`), "gelu" (erf form) or "gelu_tanh"; `gate` and `up`
    have one type, no broadcasting. weft-fuse-glu makes the op from the
    exported `mul` of the activation (as weft-fuse-gelu leaves it, or
    `g * sigmoid(g)`) and the up projection. Its backward keeps `gate` and
    `up` alone, where the unfused chain keeps the activation's input, its
    sigmoid and its output besides. Cost per element: 6 FLOPs for silu
    (sigmoid's 4, its product, the gate), 6 for gelu (weft.gelu's 5 and
    the gate), 10 for gelu_tanh (weft.gelu_tanh's 9 and the gate).
  }];
  let arguments = (ins Weft_FloatTensor:$gate, Weft_FloatTensor:$up,
                       StrAttr:$activation);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $gate `,` $up attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_RotaryOp : Weft_KernelTypedOp<"rotary", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = LayerNormSplit;
  let flops = PerInput<3>;
  let summary = "Rotary position embedding: `x * cos + rotate(x) * sin`.";
  let description = [{
    Su et al. 2021 (RoFormer), ONNX RotaryEmbedding-23's rotation with the
    angles given: `input: [.., S, D]` (D even), `cos` and `sin` of one
    shape broadcasting to it (Hugging Face's `[S, D]` or `[B, 1, S, D]`
    tables), `axis` the last dim (the rotated one; the split class
    keeps the leading dims' shards). `rotate` is the half-split layout's
    `cat(-x[D/2:], x[:D/2])` (Hugging Face's rotate_half: Llama, Mistral,
    Qwen2, GPT-NeoX), or with `interleaved` the pairs'
    `(-x[2i+1], x[2i])` (GPT-J, Meta's original Llama). The tables are
    constants (weft-fuse-rotary fuses only tables no parameter reaches),
    so the op has no gradient for them and its backward keeps nothing:
    `dx = dy * cos - rotate(dy * sin)` (rotate's transpose is its
    negation). Computed in f32 (f64 beside f64), as torch's f32 tables
    promote a 16-bit q. Cost: 3 FLOPs per element.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$cos,
                       Weft_FloatTensor:$sin, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_RmsNormOp : Weft_KernelTypedOp<"rms_norm", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = LayerNormSplit;
  let flops = PerInput<4>;
  let summary = "RMS normalisation over dims `[axis, rank)` (ONNX RMSNormalization-23).";
  let description = [{
    `Y = X * inv_rms * scale` with `inv_rms = 1 / sqrt(mean(X^2) + epsilon)`
    over the trailing dimensions from `axis` (Zhang & Sennrich 2019: Llama's,
    Mistral's and Qwen2's RMSNorm; no mean subtracted, no bias). `scale` has
    the normalised dims' shape (Gemma's `1 + w` is such a value too).
    `inv_rms` has `X`'s shape with the normalised dimensions set to 1, f32
    (f64 beside f64 X, for the float64 oracles), for the backward, which
    keeps `X` and it. weft-fuse-rms-norm makes the op from the exporters'
    chains. Cost: 4 FLOPs per element of `X`.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$output, Weft_FloatTensor:$inv_rms);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_AddLayerNormOp : Weft_KernelTypedOp<"add_layer_norm"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<9>;
  let summary = "A residual add and the layer_norm of its sum, in one kernel.";
  let description = [{
    `sum = input + residual` (one type, no broadcasting), rounded to that
    type, then `layer_norm(sum, scale, bias)` exactly as weft.layer_norm:
    `output`, `mean` and `inv_std_dev` are its results, and `sum` (the
    residual stream, which the next add and the backward read) the fourth.
    weft-fold-residual-layer-norm makes it from an add and the LayerNorm
    that reads it (Apex's and Transformer Engine's fused add + norm): one
    kernel writes the sum and normalises it from registers, where the add
    wrote it and the LayerNorm read it back. Cost: 9 FLOPs per element of
    `input`, the two ops' it replaces.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$residual,
                       Weft_FloatTensor:$scale,
                       Optional<Weft_FloatTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$output, Weft_FloatTensor:$mean,
                      Weft_FloatTensor:$inv_std_dev, Weft_FloatTensor:$sum);
  let assemblyFormat = [{
    $input `,` $residual `,` $scale (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_ScaleMaskSoftmaxOp : Weft_KernelTypedOp<"scale_mask_softmax"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<7>;
  let summary = "Attention scores divided, masked and softmaxed in one kernel.";
  let description = [{
    `softmax(where(mask, fill, input / divisor))` along the last dim, each
    step rounded to `input`'s type as the three ops round: the quotient,
    then the softmax of the masked quotient (computed in f32 for 16-bit
    types, as weft.softmax). `divisor` and `fill` are the ops' literals, in
    `input`'s type, `fill` a rank-0 tensor (a plan's attributes hold no
    infinities). `mask` (i1) is [..., s_q, s_k] with every leading dim 1
    (a causal mask shared by the batch and the heads). weft-fuse-scale-mask-
    softmax makes it from the three ops (Megatron-LM's
    FusedScaleMaskSoftmax): one pass over the [b, a, s, s] scores where
    there were three. Cost: 7 FLOPs per element (divide, select, and
    softmax's five).
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_BoolTensor:$mask,
                       Weft_FloatTensor:$fill, F64Attr:$divisor);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $mask `,` $fill attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_ScaleMaskSoftmaxGradOp : Weft_KernelTypedOp<"scale_mask_softmax_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<6>;
  let summary = "scale_mask_softmax's input gradient from its output.";
  let description = [{
    `where(mask, 0, softmax_grad(output, grad)) / divisor` along the last
    dim, each step rounded to the type as the three ops it replaces round
    (weft.softmax_grad's `output * (grad - sum(grad * output))`, the
    select, the quotient). `mask` as scale_mask_softmax's. Cost: 6 FLOPs
    per element.
  }];
  let arguments = (ins Weft_FloatTensor:$output, Weft_FloatTensor:$grad,
                       Weft_BoolTensor:$mask, F64Attr:$divisor);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output `,` $grad `,` $mask attr-dict `:` functional-type(operands, results)
  }];
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTTRANSFORMEROPS_TD
