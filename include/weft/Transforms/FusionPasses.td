//===- FusionPasses.td - graph fusions ---------------------*- tablegen -*-===//
//
// Included by Passes.td (one pass registry, Passes.h.inc).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_FUSIONPASSES_TD
#define WEFT_TRANSFORMS_FUSIONPASSES_TD

include "mlir/Pass/PassBase.td"

def FuseGlu : Pass<"weft-fuse-glu", "mlir::func::FuncOp"> {
  let summary = "Rewrite gated MLP activations (SwiGLU, GeGLU) into weft.glu";
  let description = [{
    Shazeer 2020: Llama's MLP is `down(silu(gate(x)) * up(x))`, Gemma's
    `gelu(gate(x)) * up(x)`. A `weft.mul` of two same-typed values, one of
    them an activation only the product reads (`g * sigmoid(g)` in either
    order, or the `weft.gelu` / `weft.gelu_tanh` weft-fuse-gelu made),
    becomes `weft.glu %g, %up {activation = "silu" | "gelu" |
    "gelu_tanh"}`. A product that broadcasts, or an activation read
    elsewhere too, stays as it is. The fused op's backward keeps the gate
    and up alone.
  }];
}

def FuseRotary : Pass<"weft-fuse-rotary", "mlir::func::FuncOp"> {
  let summary = "Rewrite exported rotary embeddings into weft.rotary";
  let description = [{
    Hugging Face's apply_rotary_pos_emb (Llama, Mistral, Qwen2, GPT-NeoX;
    Su et al. 2021) exports as `x * cos + rotate_half(x) * sin`,
    `rotate_half(x) = cat(-x[.., D/2:], x[.., :D/2])` along the last dim.
    That sum (its terms and products in either order), with the slices,
    neg, concat and products used by it alone, `cos` and `sin` of one type
    and computed from constants, frozen buffers and inputs only (no
    parameter reaches them: the fused op has no gradient for its tables),
    and no broadcasting of x, becomes `weft.rotary %x, %cos, %sin`. Its
    backward is one `weft.rotary_grad` and keeps nothing. GPT-J's
    rotate_every_two (Meta's original Llama), `stack((-x[.., 1::2],
    x[.., ::2]), -1).flatten(-2)` (step-2 slices, a neg, two unsqueezes, a
    concat on the new last dim, the flattening reshape), becomes the op's
    `interleaved` form.
  }];
}

def FuseRmsNorm : Pass<"weft-fuse-rms-norm", "mlir::func::FuncOp"> {
  let summary = "Rewrite exported RMSNorm chains into weft.rms_norm";
  let description = [{
    ONNX before opset 23 has no RMSNormalization, so exporters write
    Llama's RMSNorm (Zhang & Sennrich 2019) as a chain:
    `x * rsqrt(mean(x^2) + eps) * w`. The chain above each
    `weft.reduce_mean` is read as a product of powers of its leaves through
    mul, div, sqrt, reciprocal and pow by a constant, descending only into
    ops whose result the chain alone uses, and matches when it is
    `x^1 z^(-1/2) w^1` with `z = reduce_mean(x^2 over the trailing dims)
    + eps` (eps a constant >= 0, or none), the constant factor 1 within 8
    units of the rounding of x's dtype, and `w` of the normalised dims'
    shape: pow(x, 2) or x * x, 1 / sqrt, reciprocal(sqrt) or pow(., -0.5),
    x / sqrt(.), the weight on either side all match. The fused op keeps x
    and one f32 per row for the backward instead of the chain's products.
  }];
}

def FuseGelu : Pass<"weft-fuse-gelu", "mlir::func::FuncOp"> {
  let summary = "Rewrite exported GELU chains into weft.gelu / weft.gelu_tanh";
  let description = [{
    ONNX before opset 20 has no Gelu, so exporters write GELU as a chain of
    elementwise ops. Differentiated as it stands, a chain keeps up to four
    tensors of the GELU's size for the backward; `weft.gelu` and
    `weft.gelu_tanh` keep only their input (their gradients recompute the
    rest), as Megatron-LM's activation-memory count assumes (Korthikanti et
    al. 2022, §4.1), and run as one kernel.

    The chain around each `weft.erf` and `weft.tanh` is read as a
    polynomial in x and e (the erf or tanh value) through add, sub, mul,
    neg, div by a constant and pow by a small integer constant, descending
    only into ops whose result the chain alone uses; its coefficients are
    compared with GELU's within 8 units of the rounding of the constants'
    dtype (f16 literals match in an f16 graph, never looser than f32's):

    ```
    erf form:  0.5 x + 0.5 x e,  e = erf(x / sqrt(2))        -> weft.gelu
    tanh form: 0.5 x + 0.5 x e,  e = tanh(k x + k c x^3)     -> weft.gelu_tanh
               k = sqrt(2 / pi), c = 0.044715
    ```

    So every association and operand order, `x * Phi(x)` with `1/sqrt(2)`
    multiplied or `sqrt(2)` divided, `/ 2` for `* 0.5`, `pow(x, 3)` or
    `x * x * x`, and Megatron-LM's factored `k x (1 + c x x)` all match. A
    chain whose intermediate something else reads is left alone (fusing
    would compute it twice). weftc runs this pass first, on the imported
    forward graph.

    ```mlir
    %h = weft.gelu %x : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FuseAttention : Pass<"weft-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Rewrite core attention into weft.attention (FlashAttention)";
  let description = [{
    Core attention as exported, `softmax(q k^T * scale + mask) [dropout] x v`,
    keeps the `[.., Sq, Sk]` scores, probabilities and dropout mask for the
    backward: the `5 a s^2 b` bytes per layer of Korthikanti et al. 2022
    (section 4.1). `weft.attention` keeps one f32 log-sum-exp per query row
    and `weft.attention_grad` recomputes the probabilities from it (Dao et
    al. 2022, FlashAttention), so selective recompute has nothing left to
    recompute there. weftc runs this pass with `--flash-attention`, after
    weft-fuse-gelu, on the imported forward graph.

    Matched from each softmax over the last dim whose probabilities (through
    at most one dropout) are the left operand of a matmul with `v`, back to
    the matmul `q x k^T` through single-use ops on the scores: multiplies
    and divides by scalars computed from constants only (the scale, on
    either side of the mask; Hugging Face's GPT-2 exports `0 + pow(d,
    0.5)`), casts to the scores' own type (on either side of the softmax
    too), and a causal mask: `where(future, fill, scores)` (torch's
    masked_fill), `where(past, scores, fill)` or `scores + mask`, with a
    constant triangle and a fill at or below -1e4 (-inf, or Hugging Face's
    dtype minimum: exp underflows to 0 either way). Any other additive mask
    becomes the op's `bias` (a padding mask from an input attention_mask, a
    sliding window, a mask buffer), when it is the same for every head and
    no parameter reaches it; a mask of zeros is dropped; transformers 4's
    clamp of the masked scores, `max(s, finfo.min)`, is the identity here.
    q, k and v must have the
    scores' leading dims. A scale applied to q before the product (torch's
    MultiheadAttention) stays outside, with scale 1. `k` is the input of the
    transpose that made `k^T`, that transpose composed with the swap back
    (one transpose), or a new transpose.

    A core attention that does not match (a per-head or learned bias, two
    masks, a softmax over another dim, scores used elsewhere, broadcast
    heads) stays unfused, with a warning that names why. The fused op keeps the dropout's ratio and
    seed, and draws the same mask bits (its rng_id is the dropout's place).

    ```mlir
    %o, %lse = weft.attention %q, %k, %v {causal = true, scale = 0.125 : f64}
        : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>,
           tensor<2x4x64x32xf32>) -> (tensor<2x4x64x32xf32>,
                                      tensor<2x4x64xf32>)
    ```
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldWeightTranspose : Pass<"weft-fold-weight-transpose",
                               "mlir::func::FuncOp"> {
  let summary = "Run x @ transpose(W) as one gemm reading W with transB";
  let description = [{
    torch.nn.Linear exports as `MatMul(x, Transpose(W))`; run as it
    stands, every step copies every weight into its transpose before the
    product. `weft.gemm` with `transB` reads `W` itself (BLAS and cuBLAS
    take the transpose as a flag), with x's leading dims folded into the
    rows by reshapes, which are views:

    ```
    %wt = weft.transpose %w {perm = [1, 0]}      %x2 = weft.reshape %x [B*S, K]
    %y = weft.matmul %x, %wt              ->     %y2 = weft.gemm %x2, %w {transB}
                                                 %y = weft.reshape %y2 [B, S, N]
    ```

    The transpose goes when nothing else reads it. The gemm's gradient
    reads `W` and writes `dW` directly (dA = dY W, dW = dY^T X). weftc runs
    this pass on the forward graph before mixed precision, after the
    tensor- and sequence-parallel splits (which match Linear layers in the
    matmul form), so under tensor parallelism on each rank's shard of W;
    the sequence-parallel regather and the collective overlap see through
    the reshapes. Saves, per Linear and micro-batch, a copy of the weight
    (GPT-2 medium: 97 per step, 4 per layer and the tied LM head; the 22B
    model of Korthikanti et al. at t = 8: 113 MB a layer per micro-batch).
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldLinearBias : Pass<"weft-fold-linear-bias", "mlir::func::FuncOp"> {
  let summary = "Add a Linear layer's bias in its gemm (cuBLASLt's bias "
                "epilogue)";
  let description = [{
    torch.nn.Linear adds its bias after the product, an extra pass over the
    activations (a read of the product, a write of the sum). `weft.gemm`'s
    C broadcasts a `[N]` vector over the rows (ONNX Gemm-13), which
    cuBLASLt adds in the GEMM's epilogue (`CUBLASLT_EPILOGUE_BIAS`) and
    the CPU backend as the GEMM's `beta C`, before the output's one
    rounding:

    ```
    %y2 = weft.gemm %x2, %w {transB}             %y2 = weft.gemm %x2, %w, %b
    %y = weft.reshape %y2 [B, S, N]       ->         {transB, beta = 1}
    %z = weft.add %b, %y                         %z = weft.reshape %y2 [B, S, N]
    ```

    Matched where the gemm has no C, its product (alone or through one
    reshape) is read only by the add, and the other operand is a vector of
    the gemm's columns and dtype. The gradient of C is the column sum of
    dY, the add's bias gradient before. weftc runs this pass after
    weft-fold-weight-transpose, whose gemms it extends. Under tensor
    parallelism that is the column-parallel layers' biases: a row-parallel
    layer's product is all-reduced before its bias is added, once. In 16
    bits the sum is rounded once instead of twice, as torch's `addmm` with
    cuBLASLt does.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldAttentionTranspose : Pass<"weft-fold-attention-transpose",
                                  "mlir::func::FuncOp"> {
  let summary = "Run weft.attention on [B, S, H, D] operands, without the "
                "head transposes";
  let description = [{
    Models split heads as `reshape(x, [B, S, H, D])` then `transpose(0, 2,
    1, 3)` to `[B, H, S, D]`, and merge them back with the inverse
    transpose: four copies of the activations per layer forward (q, k, v,
    output) and four backward (their gradients). A fused attention reads
    any strides (FlashAttention and cuDNN take [B, S, H, D] natively; the
    CPU kernel's GEMMs take a row stride), so where q, k and v are all
    `transpose(x, [0, 2, 1, 3])` of rank-4 tensors, the attention takes the
    `x`s with `layout = "bshd"` and gives its output as `[B, S, H, Dv]`:
    an output transpose back to `[B, S, H, Dv]` becomes the output itself,
    any other reader gets one transpose, so no plan has more copies than
    before. Autodiff then gives `weft.attention_grad` the same layout, and
    the gradients need no transposes either.

    ```mlir
    %qt = weft.transpose %q {perm = [0, 2, 1, 3]}     (and k, v)
    %o, %lse = weft.attention %qt, %kt, %vt      ->   %o, %lse =
    %y = weft.transpose %o {perm = [0, 2, 1, 3]}        weft.attention %q, %k,
                                                        %v {layout = "bshd"}
    ```

    The stats stay `[B, H, Sq]` and the dropout mask that of the
    probabilities `[B, H, Sq, Sk]`, so the bits drawn (and a tensor-parallel
    shard's attributes, on the head dim of the probabilities) are
    unchanged. weftc runs this pass with `--flash-attention`, on the
    forward graph after the tensor- and sequence-parallel splits (each
    rank's heads are local then) and before mixed precision. An attention
    whose stats are already read (a backward) is left as it is.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldAttentionSplit : Pass<"weft-fold-attention-split",
                              "mlir::func::FuncOp"> {
  let summary = "Run weft.attention on the QKV projection's packed output, "
                "without the split into q, k and v";
  let description = [{
    A transformer's QKV projection gives one `[B, S, 3 H D]` tensor that
    the model splits into q, k and v along its last dim: the split copies
    all three out forward, and its gradient concatenates dq, dk and dv
    backward, two activation-sized copies of `3 B S H D` elements per
    layer. A fused attention reads rows at any stride and offset (cuDNN's
    and Transformer Engine's packed "bs3hd" layout; the CPU kernel's GEMMs
    take a row stride), so where q, k and v of a `layout = "bshd"`
    attention are `reshape(split(x)#i, [B, S, H, D])` for i = 0, 1, 2 of
    one three-way split of the last dim of a rank-3 `x`, the attention
    reads `reshape(x, [B, S, 3, H, D])` with `layout = "bs3hd"`. Autodiff
    then gives `weft.attention_grad` the same layout and one packed
    gradient, `[B, S, 3, H, D]`, which reshapes to `x`'s gradient.

    ```mlir
    %q, %k, %v = weft.split %x {axis = 2}            %p = weft.reshape %x
    %qh = weft.reshape %q [B, S, H, D] (k, v)   ->   weft.attention %p, %p,
    weft.attention %qh, %kh, %vh {layout = "bshd"}     %p {layout = "bs3hd"}
    ```

    The output stays `[B, S, H, D]`, the stats `[B, H, Sq]` and the dropout
    mask that of the probabilities: the same bits. A split or reshape that
    has other readers stays for them. weftc runs this pass with
    `--flash-attention`, after weft-fold-attention-transpose and mixed
    precision (which casts operands one by one), before autodiff.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldLossLogProb : Pass<"weft-fold-loss-log-prob", "mlir::func::FuncOp"> {
  let summary = "Keep a softmax cross-entropy's log-sum-exp per sample, not "
                "its log-probabilities, for the backward";
  let description = [{
    `weft.softmax_cross_entropy` gives the loss and `log_prob`, the
    `[N, C, d...]` log-softmax of the scores, which its gradient reads: a
    tensor as large as the logits (a language model's largest activation,
    f32 beside 16-bit logits under mixed precision), written forward and
    kept until the backward. Where nothing else reads it, this pass sets
    the loss's `log_sum_exp`: its second result becomes `log(sum_c
    exp(scores))`, `[N, d...]`, and the gradient autodiff builds reads the
    scores and it, recomputing `exp(scores - log_sum_exp)` (Apex's
    xentropy). The step keeps the scores and N numbers instead of the
    log-probabilities: for GPT-2's [8192, 50257] bf16 logits under mixed
    precision, 0.82 GB instead of 1.65 GB, and the loss's traffic halves.
    The loss is computed as before, to the bit. weftc runs it on every
    training step, before autodiff.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldLayerNormGradAdd : Pass<"weft-fold-layer-norm-grad-add",
                                "mlir::func::FuncOp"> {
  let summary = "Add a LayerNorm input's other gradient inside its "
                "gradient kernel";
  let description = [{
    In a pre-LN transformer each residual-stream value feeds its LayerNorm
    and the next residual add, so autodiff sums two gradients for it: `add
    (layer_norm_grad#0, dres)`, which reads both and writes a third
    activation-sized tensor per LayerNorm. Where the LayerNorm gradient's
    input gradient has that add as its only reader and the add does not
    broadcast, the gradient takes `dres` as `accumulate` and writes the
    sum itself, rounded once (Transformer Engine's and Megatron-LM's
    fused residual backward): one read of `dres` where an add's two reads
    and a write were. If `dres` is computed after the LayerNorm's gradient,
    the gradient moves down to the add when nothing reads its results
    before; otherwise the add stays. GPT-2 medium: 48 adds and 1.5 GB of
    traffic per step fewer. weftc runs it right after autodiff.
  }];
}

def FoldBiasGrad : Pass<"weft-fold-bias-grad", "mlir::func::FuncOp"> {
  let summary = "Compute a Linear layer's bias gradient with its weight "
                "gradient";
  let description = [{
    A Linear layer's backward reads its output gradient `dY: [M, N]` for the
    input gradient's GEMM, the weight gradient's `gemm(dY, X) {transA}`
    (`gemm(X, dY) {transA}` for a layer computing `x W`, W [K, N], as
    Hugging Face's Conv1D) and the bias gradient's `reduce_sum(dY) {axes =
    [0]}`. Where the last two sit in one block (no C, alpha 1, X rank 2
    and computed before both), they become one `weft.wgrad_bias`
    (`transposed` for the second form): on a GPU one cuBLASLt GEMM whose
    epilogue sums the bias gradient from the dY it reads
    (CUBLASLT_EPILOGUE_BGRADB, or BGRADA; a plain GEMM and the sums when
    cuBLASLt offers no algorithm for it), on the CPU the two ops' kernels. A reduce_sum keeping its dim reads the `[N]` result
    through a reshape. GPT-2 medium: 96 reduce_sums and 3.6 GB of traffic
    per step fewer. weftc runs it after autodiff.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldResidualLayerNorm : Pass<"weft-fold-residual-layer-norm",
                                 "mlir::func::FuncOp"> {
  let summary = "Fold a residual add into the LayerNorm that reads its sum";
  let description = [{
    In a pre-LN transformer each residual add's sum is the residual stream:
    the next LayerNorm normalises it and the next add reads it again. The
    add writes the sum and the LayerNorm reads it back. Where a LayerNorm's
    input is an add of two values of the sum's type (no broadcasting) and
    both ops have the same `weft.task`,
    they become one `weft.add_layer_norm`, which writes the sum and
    normalises it in one kernel (Apex's and Transformer Engine's fused add
    + norm): one read of the sum and one launch fewer per LayerNorm. Its
    place is the add's when the LayerNorm's scale and bias exist there,
    else the LayerNorm's when nothing reads the sum in between; otherwise
    both stay. The CPU backend runs it as the add and the LayerNorm, so
    results are unchanged to the bit. GPT-2 medium: 48 adds and 0.8 GB of
    traffic per step fewer. weftc runs it after weft-checkpoint (layer
    recompute cuts the forward where one activation is live: the sum alone,
    not the sum and its normalisation), and on forward-only steps.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldGemmGelu : Pass<"weft-fold-gemm-gelu", "mlir::func::FuncOp"> {
  let summary = "Apply a tanh GELU, and its derivative, in the epilogue of "
                "the GEMM beside it";
  let description = [{
    A transformer MLP's first Linear layer writes the GELU's input and the
    GELU reads it back; in the backward, the second layer's input-gradient
    GEMM writes the gradient reaching the GELU's output, and the GELU's
    gradient reads it back. Where a `weft.gelu_tanh` reads a gemm's result
    (directly or through a reshape) with the gemm's bookkeeping (stage,
    `weft.task`), the two become one
    `weft.gemm_gelu_tanh`, whose second result, the GELU's input, the
    gemm's other readers read (the GELU's gradient). Where a
    `weft.gelu_tanh_grad`'s output gradient is a gemm (no C) that nothing
    else reads, the two become one `weft.gemm_gelu_tanh_grad`. On a GPU
    each is one cuBLASLt GEMM whose epilogue applies the GELU
    (CUBLASLT_EPILOGUE_GELU_AUX, _BIAS with a Linear's bias) or multiplies
    by its derivative (CUBLASLT_EPILOGUE_DGELU), as Transformer Engine's
    and Megatron-LM's fused bias-GELU do: for a GPT-2 MLP of [B S, 4h], one
    read of the GELU's input and a write and a read of its output gradient
    fewer per layer (GPT-2 medium: 48 launches and 4.8 GB of traffic per
    step; the GELU kernels' 8 GB become the GEMMs' extra 3.2 GB). The erf
    GELU (`weft.gelu`) stays: cuBLASLt's is the
    tanh form. The CPU runs each as its two kernels (the same bits). weftc
    runs it after weft-checkpoint, and on forward-only steps.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FuseScaleMaskSoftmax : Pass<"weft-fuse-scale-mask-softmax",
                                 "mlir::func::FuncOp"> {
  let summary = "Divide, mask and softmax attention scores in one kernel, "
                "forward and backward";
  let description = [{
    A transformer's core attention divides its scores by sqrt(d), fills the
    masked positions and takes the softmax along the last dim: where a
    `weft.softmax` reads a `weft.where(mask, fill, x / divisor)` whose
    quotient and masked scores nothing else reads (one type throughout,
    `divisor` a splat literal, `fill` a scalar, the mask [..., s_q, s_k] with
    leading dims 1, one bookkeeping), the three become one
    `weft.scale_mask_softmax`. In the backward, `weft.where(mask, 0,
    softmax_grad(y, dy)) / divisor` becomes one
    `weft.scale_mask_softmax_grad`. Megatron-LM's FusedScaleMaskSoftmax and
    its backward: one pass over the [b, a, s, s] scores where there were
    three, each way. The kernels round each step as the three ops did, so
    the bits are the same (the CPU runs them as their parts). weftc runs it
    after weft-checkpoint, so recomputed core attention fuses as well, and
    on forward-only steps.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldLossGrad : Pass<"weft-fold-loss-grad", "mlir::func::FuncOp"> {
  let summary = "Compute a cross-entropy loss's gradient in its forward "
                "kernel, over the scores";
  let description = [{
    A language model's loss reads the `[N, C]` scores (logits over the
    vocabulary) for its log-sum-exp, and its gradient reads them again and
    writes a second `[N, C]` tensor. Where a `weft.softmax_cross_entropy
    {log_sum_exp}` and the `weft.softmax_cross_entropy_grad` of its
    log-sum-exp read the same scores, labels and weights on one stage and
    micro-batch, and nothing else reads the scores (or the bytes they
    view), the two become one `weft.softmax_cross_entropy_and_grad` at the
    forward's place, which writes the gradient over the scores: Megatron-LM's
    `--cross-entropy-loss-fusion`, Liger-Kernel's cross-entropy. The
    gradient's seed (d step / d loss: a constant, or f16's loss scale
    sliced from its state) moves before the forward with the ops that make
    it, when they are pure and their operands are there. GPT-2 medium
    (bf16, batch 8): one read of the 0.8 GB logits and one launch fewer per
    micro-batch (memory-bound traffic 20.26 -> 19.44 GB per step), and the
    step no longer holds the logits and their gradient at once (the arena
    13.11 -> 12.40 GB). The CPU runs the two
    kernels (the same bits). weftc runs it after weft-checkpoint (full
    recompute folds the recomputed loss with its gradient).
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldGradAccumulation : Pass<"weft-fold-grad-accumulation",
                                "mlir::func::FuncOp"> {
  let summary = "Accumulate micro-batches' weight gradients in their GEMMs";
  let description = [{
    With M micro-batches each Linear layer's weight and bias gradients are
    sums of M `weft.wgrad_bias` results (weft-accumulate-microbatches): each
    writes its own gradients, which adds then sum. Where a weight
    gradient's sum is a tree of adds whose leaves are the weight results
    of plain `wgrad_bias` ops on one stage (each leaf and inner sum read
    once, by the tree; views between allowed), and the bias gradient's
    sum is such a tree over the same ops, the ops are rewritten in block
    order: the first keeps its outputs, and each later one becomes
    `wgrad_bias ... accumulate %w_sum, %b_sum`, written over the previous
    one's outputs in place, the adds gone: Megatron-LM's
    `gradient_accumulation_fusion` (a cuBLASLt GEMM with beta = 1 and
    C = D). The sums are the bytes of the first one to run. It runs
    after weft-schedule, whose order is the backwards' (GPipe runs the last
    micro-batch's first), so the sums accumulate in the order the GEMMs
    run.

    Saves, per Linear layer and micro-batch after the first: one add of
    `[N, K]` and one of `[N]` (their launches and 3 passes over the
    gradient's bytes), and the micro-batch's own gradient buffers. ZeRO
    stages 2 and 3 reduce-scatter each micro-batch's gradients instead of
    summing them, so they have no adds to fold. The CPU runs the
    wgrad_bias and the adds, the unfused bits wherever the run's order is
    the adds' (1F1B, or no pipeline); a GPU's GEMM rounds the sum once.
    GPT-2 medium (bf16, --flash-attention, 4 micro-batches of 2), with
    the 1/M in weft-autodiff's seed: 3252 -> 2384 instructions and 28.8 ->
    22.0 GB of memory-bound traffic per step (`bench/plan_traffic.py`).
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def FoldGatherGradAdd : Pass<"weft-fold-gather-grad-add",
                             "mlir::func::FuncOp"> {
  let summary = "Scatter an embedding's gradient into its other gradient";
  let description = [{
    An embedding table's gradient, `weft.gather_grad`, zero-fills a table
    of `[V, h]` and adds the gathered rows' gradients into it. Where an add
    then sums that table with another gradient of the same table (a tied
    LM head's GEMM, as in GPT-2; the sum over micro-batches of a
    position embedding's), the add reads two tables and writes a third.
    Where the gather_grad's result is read only by such an add (no
    broadcast, on the gather_grad's stage) and the add's other operand is
    an op's result read by nothing else (through views, each read once),
    the two become `gather_grad ... accumulate %other`, written over
    `%other` in place: no zero fill, no add, and only the rows the indices
    name are read and written. Under tensor parallelism the same holds for
    a vocabulary-parallel table's shard (`vocab_parallel_gather_grad` and
    a tied head's shard of the gradient). Each row's sum is rounded to
    the table's type before it is added, as the add saw it, so the bits
    are the unfused plan's on both backends. The fused op takes the gather_grad's
    place when `%other` is computed before it, else the add's. It runs
    on the scheduled step, after weft-fold-grad-accumulation.

    GPT-2 medium (bf16, --flash-attention, batch 8): 18.73 -> 18.35 GB
    of memory-bound traffic per step; as 4 micro-batches of 2, 21.26 ->
    19.63 GB and 7 instructions fewer (`bench/plan_traffic.py`, which
    counts the rows an accumulating gather_grad touches).
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

#endif // WEFT_TRANSFORMS_FUSIONPASSES_TD
