//===- WeftGradOps.td - ops that only backward passes use ----*- tablegen -*-===//
//
// weft-autodiff expresses most derivatives with forward ops (matmul,
// transpose, reduce_sum, mul, ...). The ops here are the backward kernels
// that have no forward equivalent: fused where a composition would keep
// large temporaries, or where the derivative is a scatter.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTGRADOPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTGRADOPS_TD

def Weft_ReluGradOp : Weft_Op<"relu_grad", [Pure, SameOperandsAndResultType]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<1>;
  let summary = "d/dx relu: `dy` where `x > 0`, else 0.";
  let description = "Cost: 1 FLOP per element.";
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($output)";
}

def Weft_GeluGradOp : Weft_Op<"gelu_grad", [Pure, SameOperandsAndResultType]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<8>;
  let summary = "d/dx gelu: `dy * (Phi(x) + x * phi(x))`.";
  let description = [{
    Phi is the standard normal CDF 0.5 * (1 + erf(x / sqrt(2))), phi its
    density exp(-x^2 / 2) / sqrt(2 pi). Cost: 8 FLOPs per element.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($output)";
}

def Weft_GeluTanhGradOp : Weft_Op<"gelu_tanh_grad", [Pure, SameOperandsAndResultType]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<14>;
  let summary = "d/dx gelu_tanh: `dy * (0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2))`.";
  let description = [{
    t = tanh(k (x + c x^3)), k = sqrt(2 / pi), c = 0.044715 (the derivative
    of `weft.gelu_tanh`). Cost: 14 FLOPs per element.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($output)";
}

def Weft_ClipGradOp : Weft_Op<"clip_grad", [Pure, SameOperandsAndResultType]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<2>;
  let summary = "d/dx clip: `dy` where `min <= x <= max`, else 0 (torch's rule).";
  let description = "Cost: 2 FLOPs per element.";
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad,
                       OptionalAttr<F64Attr>:$min, OptionalAttr<F64Attr>:$max);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($output)";
}

def Weft_SoftmaxGradOp : Weft_Op<"softmax_grad", [Pure, SameOperandsAndResultType]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<4>;
  let summary = "d/dx softmax from its output: `y * (dy - sum(dy * y, axis))`.";
  let description = "Cost: 4 FLOPs per element.";
  let arguments = (ins Weft_FloatTensor:$output, Weft_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($input_grad)";
}

def Weft_LogSoftmaxGradOp : Weft_Op<"log_softmax_grad",
                                    [Pure, SameOperandsAndResultType]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<4>;
  let summary = "d/dx log_softmax from its output: `dy - exp(y) * sum(dy, axis)`.";
  let description = "Cost: 4 FLOPs per element.";
  let arguments = (ins Weft_FloatTensor:$output, Weft_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($input_grad)";
}

def Weft_LayerNormGradOp : Weft_KernelTypedOp<"layer_norm_grad", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "Gradients of layer_norm w.r.t. input, scale and bias.";
  let description = [{
    With `xhat = (x - mean) * inv_std_dev` over the normalised dims `[axis,
    rank)` of N elements: `dscale = sum(dy * xhat)`, `dbias = sum(dy)` over
    the leading dims, and
    `dx = inv_std_dev * (g - mean(g) - xhat * mean(g * xhat))` with
    `g = dy * scale`. With `accumulate` (of the input's type: the input's
    gradient from its other readers, a transformer's residual stream;
    weft-fold-layer-norm-grad-add) `input_grad` is `dx + accumulate`,
    rounded once. Cost: 12 FLOPs per element of `x`, 13 with `accumulate`.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Weft_FloatTensor:$mean, Weft_FloatTensor:$inv_std_dev,
                       Weft_FloatTensor:$grad,
                       Optional<Weft_FloatTensor>:$accumulate, I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$input_grad, Weft_FloatTensor:$scale_grad,
                      Weft_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $mean `,` $inv_std_dev `,` $grad
    (`accumulate` $accumulate^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_GluGradOp : Weft_KernelTypedOp<"glu_grad", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "Gradients of glu w.r.t. gate and up.";
  let description = [{
    `gate_grad = grad * up * act'(gate)`, `up_grad = grad * act(gate)`,
    the activation recomputed from `gate` (silu' = s (1 + x (1 - s)), s
    the sigmoid; the GELUs' derivatives as weft.gelu_grad and
    weft.gelu_tanh_grad). Cost per element: 12 FLOPs for silu, 12 for
    gelu, 24 for gelu_tanh (the activation, its derivative, three
    products).
  }];
  let arguments = (ins Weft_FloatTensor:$gate, Weft_FloatTensor:$up,
                       Weft_FloatTensor:$grad, StrAttr:$activation);
  let results = (outs Weft_FloatTensor:$gate_grad, Weft_FloatTensor:$up_grad);
  let assemblyFormat = [{
    $gate `,` $up `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_RotaryGradOp : Weft_KernelTypedOp<"rotary_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<3>;
  let summary = "Gradient of rotary w.r.t. its input.";
  let description = [{
    `dx = grad * cos - rotate(grad * sin)`, rotate as the forward's
    (`interleaved` or the half-split layout): rotate is a signed
    permutation with `rotate^T = -rotate`. Cost: 3 FLOPs per element.
  }];
  let arguments = (ins Weft_FloatTensor:$grad, Weft_FloatTensor:$cos,
                       Weft_FloatTensor:$sin, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$interleaved);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $grad `,` $cos `,` $sin attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_RmsNormGradOp : Weft_KernelTypedOp<"rms_norm_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<9>;
  let summary = "Gradients of rms_norm w.r.t. input and scale.";
  let description = [{
    With `xhat = x * inv_rms` over the normalised dims `[axis, rank)` of N
    elements and `g = dy * scale`: `dscale = sum(dy * xhat)` over the
    leading dims and `dx = inv_rms * (g - xhat * mean(g * xhat))` (the
    layer_norm_grad rule without the mean terms). Cost: 9 FLOPs per element
    of `x`.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Weft_FloatTensor:$inv_rms, Weft_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$input_grad,
                      Weft_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $inv_rms `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_WgradBiasOp : Weft_KernelTypedOp<"wgrad_bias", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  // Accumulates into its running sums when given.
  let inPlace = [Weft_InPlace<0, 2>, Weft_InPlace<1, 3>];
  let maxInputs = 4; // the weight and bias accumulators
  let summary = "A Linear layer's weight and bias gradients from one read of "
                "its output gradient.";
  let description = [{
    `grad: [M, N]` (the layer's output gradient), `input: [M, K]` (its
    input), one float dtype: `weight_grad = grad^T input : [N, K]` (the
    gemm(grad, input) with `transA`: a Linear layer's weight is [N, K]),
    or, with `transposed`, `input^T grad : [K, N]` (gemm(input, grad)
    with `transA`: a layer computing `x W` with W [K, N], as Hugging
    Face's Conv1D); and `bias_grad[n] = sum_m grad[m, n] : [N]`, summed
    in double on the CPU, f32 or wider on a GPU. weft-fold-bias-grad makes
    it from that gemm and the reduce_sum beside it; on a GPU it is one
    cuBLASLt GEMM whose epilogue sums the bias gradient
    (CUBLASLT_EPILOGUE_BGRADB, or BGRADA when transposed), so `grad` is
    read once. Cost: `2 M N K + M N` FLOPs, the two ops' it replaces.

    With `accumulate` (two operands, of the results' types: the weight's
    and the bias's gradients summed over the earlier micro-batches) the
    results are those sums plus this call's gradients, written over the
    accumulators in place (weft-fold-grad-accumulation makes it only
    where nothing else reads them): Megatron-LM's
    `gradient_accumulation_fusion`, a cuBLASLt GEMM with beta = 1 whose
    C is its D, so no micro-batch's own weight gradient is ever stored.
    Cost: `N K + N` FLOPs more, the adds it replaces.
  }];
  let arguments = (ins Weft_FloatTensor:$grad, Weft_FloatTensor:$input,
                       Variadic<Weft_FloatTensor>:$accumulate,
                       UnitAttr:$transposed);
  let results = (outs Weft_FloatTensor:$weight_grad,
                      Weft_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input (`accumulate` $accumulate^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_DropoutGradOp : Weft_Op<"dropout_grad", [Pure]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerOutput<2>;
  let summary = "d/dx dropout: `dy * mask / (1 - ratio)`.";
  let description = "Cost: 2 FLOPs per element.";
  let arguments = (ins Weft_FloatTensor:$grad, Weft_BoolTensor:$mask,
                       F64Attr:$ratio);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$grad `,` $mask attr-dict `:` functional-type(operands, results)";
}

def Weft_GatherElementsGradOp : Weft_KernelTypedOp<"gather_elements_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<1>;
  let summary = "d/d data of gather_elements: `grad` added into zeros of `shape`.";
  let description = [{
    `data_grad[q] = sum of grad[p]` over the positions p of `indices` that
    read element q (an element read twice gets both), in p's order along
    the axis, so every backend sums in one order: no atomics. Cost: 1 FLOP
    per element of `grad`.
  }];
  let arguments = (ins Weft_FloatTensor:$grad, Weft_IndexTensor:$indices,
                       I64Attr:$axis, DenseI64ArrayAttr:$shape);
  let results = (outs Weft_FloatTensor:$data_grad);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_GatherGradOp : Weft_KernelTypedOp<"gather_grad", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let inPlace = [Weft_InPlace<0, 2>];
  let summary = "d/d data of gather: scatter-add `dy` rows into zeros of `shape`.";
  let description = [{
    The embedding backward: row `indices[i]` of the result accumulates every
    `dy` slice gathered from it (repeated indices add up, in index order).
    Cost: 1 FLOP per element of `dy`.

    With `accumulate` (of the result's type: the data's gradient from its
    other readers, a tied LM head's GEMM or an earlier micro-batch's
    embedding gradient; weft-fold-gather-grad-add) the result is
    `accumulate + data_grad`, each row's sum rounded to the result's type
    before the add as the add it replaces saw it, so the bits are that
    add's; written over `accumulate` in place, so no zero-filled table is
    stored and rows no index names are not touched. Cost: the add's
    `numel(data_grad)` FLOPs more.
  }];
  let arguments = (ins Weft_FloatTensor:$grad,
                       Weft_IndexTensor:$indices,
                       Optional<Weft_FloatTensor>:$accumulate, I64Attr:$axis,
                       DenseI64ArrayAttr:$shape);
  let results = (outs Weft_FloatTensor:$data_grad);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $indices (`accumulate` $accumulate^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_SoftmaxCrossEntropyGradOp
    : Weft_InferredOp<"softmax_cross_entropy_grad",
                      [AttrSizedOperandSegments], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  // Whether `log_probs` is the scores with `lse` beside them.
  let planAttrs = [Weft_PlanAttr<"log_sum_exp", "Bool">];
  let summary = "d/d scores of softmax_cross_entropy, from its "
                "log-probabilities or its scores and log-sum-exp.";
  let description = [{
    `dscores = (softmax - onehot(labels)) * w[label] * dloss_scale`, where the
    scale is `dloss` for "sum", `dloss / sum(weights)` for "mean", and
    `dloss[n, d...]` elementwise for "none"; ignored labels get 0.
    `input` is the forward's `log_prob`, or, given the forward's
    `log_sum_exp` (`[N, d...]`), its scores: `softmax = exp(scores -
    log_sum_exp)`. `scores_grad` has `input`'s element type, or `grad_type`
    (the scores' 16-bit type when the forward's `log_prob_type` widened
    them). Cost: 3 FLOPs per element of `input`, 4 from the scores.
  }];
  let arguments = (ins Weft_FloatTensor:$input,
                       Weft_IndexTensor:$labels,
                       Weft_FloatTensor:$grad,
                       Optional<Weft_FloatTensor>:$weights,
                       Optional<Weft_FloatTensor>:$log_sum_exp,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<TypeAttr>:$grad_type);
  let results = (outs Weft_FloatTensor:$scores_grad);
  let assemblyFormat = [{
    $input `,` $labels `,` $grad (`,` $weights^)?
    (`log_sum_exp` $log_sum_exp^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_SoftmaxCrossEntropyAndGradOp
    : Weft_KernelTypedOp<"softmax_cross_entropy_and_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<10>;
  // The gradient may overwrite the scores.
  let inPlace = [Weft_InPlace<2, 0, 0>];
  let summary = "softmax_cross_entropy {log_sum_exp} and its gradient from "
                "one read of the scores, the gradient in their place.";
  let description = [{
    `(loss, log_sum_exp) = softmax_cross_entropy {log_sum_exp}(scores,
    labels, weights?)`, then `scores_grad = softmax_cross_entropy_grad
    (scores, labels, grad, weights?, log_sum_exp)`: the two ops
    weft-fold-loss-grad replaces, with their formulas and attributes
    (`log_prob_type`: an f32 loss and log-sum-exp beside 16-bit scores).
    `grad` is d step / d loss (the backward's seed: 1, a micro-batch's
    share, or f16's loss scale), known when the forward runs. Megatron-LM's
    and Liger-Kernel's fused cross-entropy: a GPU kernel reads each row of
    the scores and writes its gradient over it (`scores_grad` has the
    scores' type and, in the memory plan, their bytes, so nothing may read
    the scores after this op: weft-fold-loss-grad makes it only there).
    The `[N, C, d...]` scores are read once, not twice, and the step never
    holds the scores and their gradient at once. Cost: 10 FLOPs per element of
    `scores` (6 for the loss, 4 for the gradient).
  }];
  let arguments = (ins Weft_FloatTensor:$scores,
                       Weft_IndexTensor:$labels,
                       Weft_FloatTensor:$grad,
                       Optional<Weft_FloatTensor>:$weights,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<TypeAttr>:$log_prob_type);
  let results = (outs Weft_FloatTensor:$loss, Weft_FloatTensor:$log_sum_exp,
                      Weft_FloatTensor:$scores_grad);
  let assemblyFormat = [{
    $scores `,` $labels `,` $grad (`,` $weights^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_NllLossGradOp : Weft_KernelTypedOp<"nll_loss_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<1>;
  let summary = "d/d input of nll_loss: `-w[t] * scale` at the target class.";
  let description = [{
    Zero everywhere except `[n, target, d...]`, which holds `-w[target]`
    times `dloss` ("sum"), `dloss / sum(weights)` ("mean") or
    `dloss[n, d...]` ("none"); ignored targets get 0.
    Cost: 1 FLOP per element of `input`.
  }];
  let arguments = (ins Weft_FloatTensor:$input,
                       Weft_IndexTensor:$target,
                       Weft_FloatTensor:$grad,
                       Optional<Weft_FloatTensor>:$weight,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $input `,` $target `,` $grad (`,` $weight^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_ConvWeightGradOp : Weft_KernelTypedOp<"conv_weight_grad", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "d/dW of conv: correlate the input with the output gradient.";
  let description = [{
    For `y = conv(x, W)` with the given window attributes, the gradient of
    `W: [M, C/group, kernel_shape...]` is, per group,
    `dY_g [M/g, positions] x im2col(x)_g^T`, summed over the batch (the
    input gradient is a conv_transpose of dY with W). Cost: the forward
    conv's multiply-adds, times 2.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group);
  let results = (outs Weft_FloatTensor:$weight_grad);
  let assemblyFormat = "$input `,` $grad attr-dict `:` functional-type(operands, results)";
}

def Weft_BatchNormGradOp : Weft_KernelTypedOp<"batch_norm_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<8>;
  let summary = "Gradients of batch_norm w.r.t. input, scale and bias.";
  let description = [{
    Per channel over the batch and spatial dims (count n): with
    `xhat = (x - mu) * rstd`, `dbias = sum(dy)`, `dscale = sum(dy * xhat)`.
    Training mode uses the batch mean and (population) variance, and
    `dx = scale * rstd / n * (n * dy - dbias - xhat * dscale)`; inference
    mode uses `mean`/`var` and `dx = dy * scale * rstd`.
    Cost: 8 FLOPs per element of `x`.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Weft_FloatTensor:$mean, Weft_FloatTensor:$var,
                       Weft_FloatTensor:$grad, F64Attr:$epsilon,
                       BoolAttr:$training);
  let results = (outs Weft_FloatTensor:$input_grad, Weft_FloatTensor:$scale_grad,
                      Weft_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $mean `,` $var `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_MaxPoolGradOp : Weft_Op<"max_pool_grad", [Pure], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "d/dx max_pool: each dy goes to its window's (first) maximum.";
  let description = "Cost: `prod(kernel_shape)` FLOPs per element of `dy`.";
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$input `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_AvgPoolGradOp : Weft_Op<"avg_pool_grad", [Pure], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "d/dx avg_pool: each dy spread evenly over its window.";
  let description = "Cost: `prod(kernel_shape)` FLOPs per element of `dy`.";
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad,
                       DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       BoolAttr:$count_include_pad);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$input `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_ResizeGradOp : Weft_Op<"resize_grad", [Pure], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "d/dx nearest resize: scatter-add dy onto the source pixels.";
  let description = "Cost: 1 FLOP per element of `dy`.";
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad,
                       DenseF64ArrayAttr:$scales,
                       StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$input `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTGRADOPS_TD
