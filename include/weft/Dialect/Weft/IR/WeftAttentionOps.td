//===- WeftAttentionOps.td - fused core attention ------------*- tablegen -*-===//
//
// Core attention as one op (weft-fuse-attention, weftc --flash-attention):
// softmax(scale q k^T, causal) [dropout] v without the [.., Sq, Sk] scores
// or probabilities in memory. The forward keeps one log-sum-exp per query
// row and the backward recomputes the probabilities from it (Dao et al.
// 2022, FlashAttention, Algorithms 1 and 2), so Megatron's selective
// recompute of core attention costs nothing here (Korthikanti et al. 2022,
// section 5: the 5 a s^2 b activation term disappears). On a GPU the kernel
// is cuDNN's fused scaled-dot-product attention.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTATTENTIONOPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTATTENTIONOPS_TD

def Weft_AttentionOp : Weft_Op<"attention", [InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = LowPrecision;
  let split = HeadsSplit;
  let flops = CustomFlopRule;
  let planAttrs = Weft_DropoutMaskAttrs;
  let summary = "Fused scaled dot-product attention (FlashAttention).";
  let description = [{
    `q: [.., Sq, D]`, `k: [.., Sk, D]`, `v: [.., Sk, Dv]`, one float dtype
    and the same leading (batch, head) dims. With `S = scale * q k^T`
    (`S[i, j] = -inf` for `j > i` when `causal`, which needs `Sq == Sk`) and
    `P = softmax(S)` over the keys: `output = P' v : [.., Sq, Dv]`, where
    `P' = P * keep / (1 - dropout_ratio)` with the dropout mask of the
    probabilities' shape `[.., Sq, Sk]` (docs/plan-format.md, the Philox
    stream of `weft.dropout`: the same bits the unfused dropout draws), or
    `P' = P` without `dropout_ratio`. `stats = log(sum_j exp(S[i, j]))`,
    `[.., Sq]` (cuDNN's softmax statistics), for the backward: f32, or f64
    for f64 operands (the float64 oracles).

    The op is not pure: with a dropout it draws random bits, keyed like a
    `weft.dropout` (its rng_id counts among the dropouts').

    `layout = "bshd"` (weft-fold-attention-transpose) takes the operands as
    the projections make them, `q: [B, Sq, H, D]`, `k: [B, Sk, H, D]`, `v:
    [B, Sk, H, Dv]`, and gives `output: [B, Sq, H, Dv]`: the same attention
    over (batch, head) `[B, H]`, read and written with strides instead of
    through [B, H, S, D] copies (FlashAttention's and cuDNN's BSHD layout).
    `stats` stay `[B, H, Sq]` and the dropout mask of the probabilities
    `[B, H, Sq, Sk]`, as without it.

    `layout = "bs3hd"` (weft-fold-attention-split) takes q, k and v as one
    packed `[B, S, 3, H, D]` value, the QKV projection's `[B, S, 3 H D]`
    output reshaped: q is its part 0, k part 1, v part 2 (Transformer
    Engine's bs3hd). The op names that value three times; the output is
    `[B, S, H, D]` as under "bshd". No split copies q, k and v out, and the
    gradient (one packed value) needs no concat.

    With `bias` (an additive mask: a padding mask, a sliding window, what
    an exporter adds to the scores), `S = scale * q k^T + bias` before the
    causal mask and the softmax: `bias` has the scores' rank and dtype and
    each dim equal to theirs `[.., Sq, Sk]` or 1 (broadcast), its last
    `Sk`; weft-fuse-attention takes one only when its head dim is 1 and no
    parameter reaches it, as it has no gradient (a mask, not a learned
    bias). A row whose every score is -inf (every key masked) gives 0 and
    stats -inf, as FlashAttention and ONNX Attention-23 define it (torch's
    decomposition guards the softmax with where(isnan(p), 0, p) for it).

    Grouped-query attention (Ainslie et al. 2023; weft-fuse-attention
    reads through Hugging Face's repeat_kv): rank-4 `k` and `v` may have
    `Hkv` heads where q has `H`, `Hkv` dividing `H` (`[B, Hkv, Sk, D]`, or
    `[B, Sk, Hkv, D]` under "bshd"); query head `h` attends with kv head
    `h / (H / Hkv)`, and the backward sums a group's gradients into its kv
    head.

    Cost: `2 N Sq Sk (D + Dv)` FLOPs for the two products plus 5 per score
    (scale, mask, softmax) and 2 more with a dropout, `N` the product of
    the (batch, head) dims.
  }];
  let arguments = (ins Weft_FloatTensor:$q, Weft_FloatTensor:$k,
                       Weft_FloatTensor:$v, Optional<Weft_FloatTensor>:$bias,
                       F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       OptionalAttr<F64Attr>:$dropout_ratio,
                       OptionalAttr<I64Attr>:$seed,
                       OptionalAttr<StrAttr>:$layout);
  let results = (outs Weft_FloatTensor:$output, Weft_FloatTensor:$stats);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_AttentionGradOp : Weft_KernelTypedOp<"attention_grad", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let planAttrs = Weft_DropoutMaskAttrs;
  let summary = "Gradients of attention w.r.t. q, k and v (FlashAttention's "
                "backward).";
  let description = [{
    Operands: the forward's `q`, `k`, `v`, `output` and `stats`, the
    output's gradient `grad`, and the forward's `bias` if it had one (no
    gradient is taken for it); attributes as the forward's. Recomputes
    `P = exp(S - stats)` and, with `D_i = sum(grad_i * output_i)`:
    `dv = P'^T grad`, `dP' = grad v^T`, `dS = P * (dP' * keep / (1 - p) -
    D)`, `dq = scale * dS k`, `dk = scale * dS^T q` (Dao et al. 2022,
    Algorithm 4; `D` equals `rowsum(P * dP)` with or without the dropout).
    The dropout bits are the forward's: the plan carries the forward's
    rng_id and shard attributes on this instruction too. With `layout =
    "bshd"` every operand and gradient but `stats` is `[B, S, H, D]`. With
    `layout = "bs3hd"` the one result is the packed `[B, S, 3, H, D]`
    gradient of the packed q, k, v: dq, dk and dv are its parts 0, 1, 2.
    Otherwise the results are dq, dk and dv.

    Cost: `2 N Sq Sk (3 D + 2 Dv)` FLOPs for the five products plus 8 per
    score.
  }];
  let arguments = (ins Weft_FloatTensor:$q, Weft_FloatTensor:$k,
                       Weft_FloatTensor:$v, Weft_FloatTensor:$output,
                       Weft_FloatTensor:$stats, Weft_FloatTensor:$grad,
                       Optional<Weft_FloatTensor>:$bias, F64Attr:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal,
                       OptionalAttr<F64Attr>:$dropout_ratio,
                       OptionalAttr<I64Attr>:$seed,
                       OptionalAttr<StrAttr>:$layout);
  let results = (outs Variadic<Weft_FloatTensor>:$grads);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $output `,` $stats `,` $grad (`bias` $bias^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTATTENTIONOPS_TD
