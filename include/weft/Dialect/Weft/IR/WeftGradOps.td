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
  let summary = "d/dx relu: `dy` where `x > 0`, else 0.";
  let description = "Cost: 1 FLOP per element.";
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$grad);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input `,` $grad attr-dict `:` type($output)";
}

def Weft_SoftmaxGradOp : Weft_Op<"softmax_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "d/dx softmax from its output: `y * (dy - sum(dy * y, axis))`.";
  let description = "Cost: 4 FLOPs per element.";
  let arguments = (ins Weft_FloatTensor:$output, Weft_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($input_grad)";
}

def Weft_LogSoftmaxGradOp : Weft_Op<"log_softmax_grad",
                                    [Pure, SameOperandsAndResultType]> {
  let summary = "d/dx log_softmax from its output: `dy - exp(y) * sum(dy, axis)`.";
  let description = "Cost: 4 FLOPs per element.";
  let arguments = (ins Weft_FloatTensor:$output, Weft_FloatTensor:$grad,
                       I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$output `,` $grad attr-dict `:` type($input_grad)";
}

def Weft_LayerNormGradOp : Weft_InferredOp<"layer_norm_grad"> {
  let summary = "Gradients of layer_norm w.r.t. input, scale and bias.";
  let description = [{
    With `xhat = (x - mean) * inv_std_dev` over the normalised dims `[axis,
    rank)` of N elements: `dscale = sum(dy * xhat)`, `dbias = sum(dy)` over
    the leading dims, and
    `dx = inv_std_dev * (g - mean(g) - xhat * mean(g * xhat))` with
    `g = dy * scale`. Cost: 12 FLOPs per element of `x`.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Weft_FloatTensor:$mean, Weft_FloatTensor:$inv_std_dev,
                       Weft_FloatTensor:$grad, I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$input_grad, Weft_FloatTensor:$scale_grad,
                      Weft_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $scale `,` $mean `,` $inv_std_dev `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_DropoutGradOp : Weft_Op<"dropout_grad", [Pure]> {
  let summary = "d/dx dropout: `dy * mask / (1 - ratio)`.";
  let description = "Cost: 2 FLOPs per element.";
  let arguments = (ins Weft_FloatTensor:$grad, Weft_BoolTensor:$mask,
                       F64Attr:$ratio);
  let results = (outs Weft_FloatTensor:$input_grad);
  let assemblyFormat = "$grad `,` $mask attr-dict `:` functional-type(operands, results)";
}

def Weft_GatherGradOp : Weft_InferredOp<"gather_grad"> {
  let summary = "d/d data of gather: scatter-add `dy` rows into zeros of `shape`.";
  let description = [{
    The embedding backward: row `indices[i]` of the result accumulates every
    `dy` slice gathered from it (repeated indices add up). Cost: 1 FLOP per
    element of `dy`.
  }];
  let arguments = (ins Weft_FloatTensor:$grad,
                       StaticShapeTensorOf<[I32, I64]>:$indices, I64Attr:$axis,
                       DenseI64ArrayAttr:$shape);
  let results = (outs Weft_FloatTensor:$data_grad);
  let assemblyFormat = "$grad `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Weft_SoftmaxCrossEntropyGradOp : Weft_InferredOp<"softmax_cross_entropy_grad"> {
  let summary = "d/d scores of softmax_cross_entropy, from its log-probabilities.";
  let description = [{
    `dscores = (softmax - onehot(labels)) * w[label] * dloss_scale`, where the
    scale is `dloss` for "sum", `dloss / sum(weights)` for "mean", and
    `dloss[n, d...]` elementwise for "none"; ignored labels get 0.
    Cost: 3 FLOPs per element of `log_prob`.
  }];
  let arguments = (ins Weft_FloatTensor:$log_prob,
                       StaticShapeTensorOf<[I32, I64]>:$labels,
                       Weft_FloatTensor:$grad,
                       Optional<Weft_FloatTensor>:$weights,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Weft_FloatTensor:$scores_grad);
  let assemblyFormat = [{
    $log_prob `,` $labels `,` $grad (`,` $weights^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTGRADOPS_TD
