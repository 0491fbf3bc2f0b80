//===- WeftOps.td - weft compute ops -------------------------*- tablegen -*-===//
//
// One op per ONNX operator family, with ONNX opset-17 semantics. Value-dependent
// ONNX operands (shapes, axes, pads, scales, clip bounds) are attributes here:
// the importer folds them, so every result type is static and inferable.
// Ops that ONNX expresses but weft normalises away: Identity (forwarded),
// Flatten/Squeeze/Unsqueeze (-> weft.reshape), GlobalAveragePool
// (-> weft.reduce_mean), Shape/ConstantOfShape/Range (-> weft.constant).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTOPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTOPS_TD

include "weft/Dialect/Weft/IR/WeftBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def Weft_SqrtOp : Weft_UnaryOp<"sqrt", "Sqrt", FollowPrecision>;
def Weft_ReciprocalOp : Weft_UnaryOp<"reciprocal", "Reciprocal", FullPrecision>;
def Weft_NegOp : Weft_UnaryOp<"neg", "Neg", FollowPrecision>;
def Weft_ExpOp : Weft_UnaryOp<"exp", "Exp", FullPrecision>;
def Weft_LogOp : Weft_UnaryOp<"log", "Log", FullPrecision>;
def Weft_ErfOp : Weft_UnaryOp<"erf", "Erf", FollowPrecision>;
def Weft_TanhOp : Weft_UnaryOp<"tanh", "Tanh", FollowPrecision>;
def Weft_ReluOp : Weft_UnaryOp<"relu", "Relu", FollowPrecision>;
def Weft_SigmoidOp : Weft_UnaryOp<"sigmoid", "Sigmoid", FollowPrecision>;
// Rotary embeddings' tables as the exporters trace them (cos and sin of
// position x inv_freq): folded at import when the positions are constants.
def Weft_SinOp : Weft_UnaryOp<"sin", "Sin", FullPrecision>;
def Weft_CosOp : Weft_UnaryOp<"cos", "Cos", FullPrecision>;

def Weft_GeluOp : Weft_Op<"gelu", [Pure, SameOperandsAndResultType,
                                   DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<5>;
  let summary = "Elementwise GELU, erf form: `x * 0.5 * (1 + erf(x / sqrt(2)))`.";
  let description = [{
    Hendrycks & Gimpel, "Gaussian Error Linear Units", 2016: x * Phi(x), Phi
    the standard normal CDF; ONNX Gelu-20 with `approximate = "none"`. ONNX
    1.12 has no Gelu, so exporters emit the erf chain; `weft-fuse-gelu`
    rewrites that chain into this op. Its backward (`weft.gelu_grad`) reads
    only `x`, so a GELU keeps one activation for the backward, as Megatron-LM
    counts it (Korthikanti et al. 2022, §4.1), instead of the chain's four.
    Cost: 5 FLOPs per element (the chain's div, erf, add, mul, mul).
  }];
  let arguments = (ins Weft_FloatTensor:$input);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Weft_GeluTanhOp : Weft_Op<"gelu_tanh", [Pure, SameOperandsAndResultType,
                                   DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<9>;
  let summary = "Elementwise GELU, tanh approximation (GPT-2's `gelu_new`).";
  let description = [{
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`: Hendrycks &
    Gimpel 2016, eq. in section 2; ONNX Gelu-20 with `approximate = "tanh"`;
    torch's `gelu(approximate="tanh")`, Hugging Face's `NewGELUActivation`,
    Megatron-LM's `bias_gelu`. `weft-fuse-gelu` rewrites the exported chain
    into this op. Its backward (`weft.gelu_tanh_grad`) reads only `x`.
    Cost: 9 FLOPs per element (the chain's x^3, two scalings, add, tanh,
    add and two products).
  }];
  let arguments = (ins Weft_FloatTensor:$input);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Weft_AddOp : Weft_BinaryOp<"add", "Add", PromotePrecision> {
  // A micro-batch sum may add into its running sum (kAccumulateAttr).
  let inPlace = [Weft_InPlace<0, 0, 0>];
}
def Weft_SubOp : Weft_BinaryOp<"sub", "Sub", PromotePrecision>;
def Weft_MulOp : Weft_BinaryOp<"mul", "Mul", PromotePrecision>;
def Weft_DivOp : Weft_BinaryOp<"div", "Div", PromotePrecision>;
def Weft_PowOp : Weft_BinaryOp<"pow", "Pow", FullPrecision>;
// ONNX Max-13/Min-13 of two operands (the importer chains n-ary ones); a NaN
// operand gives NaN, and the gradient is torch.maximum's/minimum's.
def Weft_MaxOp : Weft_BinaryOp<"max", "Max", PromotePrecision>;
def Weft_MinOp : Weft_BinaryOp<"min", "Min", PromotePrecision>;
def Weft_EqualOp : Weft_BinaryOp<"equal", "Equal", PromotePrecision,
                                 Weft_Tensor>;

def Weft_WhereOp : Weft_KernelTypedOp<"where", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = PromotePrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Select `x` where `condition` holds, else `y` (ONNX Where-16).";
  let description = [{
    All three operands broadcast together (numpy rules). Cost: 1 FLOP per
    result element.
  }];
  let arguments = (ins Weft_BoolTensor:$condition, Weft_Tensor:$x,
                       Weft_Tensor:$y);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = [{
    $condition `,` $x `,` $y attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_ClipOp : Weft_Op<"clip", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Clamp to [`min`, `max`] (ONNX Clip-13, bounds folded).";
  let description = [{
    A missing bound is unbounded. Cost: 1 FLOP per element.
  }];
  let arguments = (ins Weft_NumericTensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let results = (outs Weft_NumericTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Weft_CastOp : Weft_KernelTypedOp<"cast", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Convert element type to `to` (ONNX Cast-13).";
  let description = [{
    Conversion to bf16 truncates, as ONNX Cast-13 (and libonnx 1.12's
    reference) does, unless `nearest_even` is set: then it rounds to
    nearest, ties to even, as torch's `.to(torch.bfloat16)` and ONNX
    Cast-19. weft-mixed-precision's casts and every gradient cast round.
    Other conversions round to nearest even. Cost: 1 FLOP per element.
  }];
  let arguments = (ins Weft_Tensor:$input, TypeAttr:$to,
                       DefaultValuedAttr<BoolAttr, "false">:$nearest_even);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_ConstantOp : Weft_InferredOp<"constant", [ConstantLike]> {
  let lowering = ConstantLowering;
  let backends = NoKernel;
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let summary = "A constant tensor (ONNX Constant, and folded shape math).";
  let description = [{
    Holds its value inline. Shape computations that the importer folds
    (Shape, ConstantOfShape, Range and anything computed from them) end up
    here. Cost: nothing; the value is materialised when the plan is loaded.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def Weft_MatMulOp : Weft_KernelTypedOp<"matmul", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = LowPrecision;
  let split = LinearSplit;
  let flops = CustomFlopRule;
  let summary = "numpy matmul with batch broadcasting (ONNX MatMul-13).";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]`; 1-D operands are promoted as
    numpy does and the promoted dimension is removed from the result.
    With `transA` (`transB`) the lhs (rhs) is stored `[..., K, M]`
    (`[..., N, K]`) and read with its last two dims swapped, as BLAS reads
    a transposed operand (rank >= 2): the gradient rule's `dY B^T` and
    `A^T dY` copy nothing. ONNX's MatMul has no such attribute.
    Cost: `2*M*N*K` FLOPs per batch element.
  }];
  let arguments = (ins Weft_FloatTensor:$lhs, Weft_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_GemmOp : Weft_KernelTypedOp<"gemm", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = LowPrecision;
  let split = LinearSplit;
  let flops = CustomFlopRule;
  let summary = "`alpha*op(A)*op(B) + beta*C` (ONNX Gemm-13).";
  let description = [{
    `A` is `[M,K]` (`[K,M]` with `transA`), `B` is `[K,N]` (`[N,K]` with
    `transB`), `C` broadcasts to `[M,N]`. Cost: `2*M*N*K` FLOPs, plus `M*N`
    for adding `C` and `M*N` more for `beta`'s product unless `beta` is 1.
  }];
  let arguments = (ins Weft_FloatTensor:$a, Weft_FloatTensor:$b,
                       Optional<Weft_FloatTensor>:$c,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Whether C is added as it is (beta 1: a Linear's bias,
    /// weft-fold-linear-bias), with no product by beta.
    bool addsCUnscaled() {
      return getC() && getBeta().isExactlyValue(1.0);
    }
  }];
}

def Weft_GemmGeluTanhOp : Weft_KernelTypedOp<"gemm_gelu_tanh", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "A gemm and the tanh GELU of its output, in one GEMM.";
  let description = [{
    `pre_activation = alpha*op(A)*op(B) + beta*C` exactly as weft.gemm
    (its operands, attributes and result), and `output =
    gelu_tanh(pre_activation)` as weft.gelu_tanh: the MLP's first Linear
    layer and its activation, whose gradient reads `pre_activation`.
    weft-fold-gemm-gelu makes it; on a GPU one cuBLASLt GEMM whose
    epilogue applies the GELU (tanh form) and stores its input beside
    (CUBLASLT_EPILOGUE_GELU_AUX, _BIAS with a Linear's bias as C), so the
    GELU's input is not read back. Cost: the gemm's FLOPs and 9 per
    element of the output, the two ops' it replaces.
  }];
  let arguments = (ins Weft_FloatTensor:$a, Weft_FloatTensor:$b,
                       Optional<Weft_FloatTensor>:$c,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Weft_FloatTensor:$output,
                      Weft_FloatTensor:$pre_activation);
  let assemblyFormat = [{
    $a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_GemmGeluTanhGradOp : Weft_KernelTypedOp<"gemm_gelu_tanh_grad", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "A gemm that gives a tanh GELU's output gradient, and the "
                "GELU's input gradient from it.";
  let description = [{
    `output = gelu_tanh_grad(pre_activation, alpha*op(A)*op(B))`: the
    gemm (no C) is the gradient reaching a GELU's output (the MLP's second
    Linear layer's input gradient), `pre_activation` the GELU's input, of
    the gemm's result type. weft-fold-gemm-gelu makes it; on a GPU one
    cuBLASLt GEMM whose epilogue multiplies by the GELU's derivative
    (CUBLASLT_EPILOGUE_DGELU), so the output gradient is neither written
    nor read back. Cost: the gemm's FLOPs and 14 per element of the
    output, the two ops' it replaces.
  }];
  let arguments = (ins Weft_FloatTensor:$a, Weft_FloatTensor:$b,
                       Weft_FloatTensor:$pre_activation,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<BoolAttr, "false">:$transA,
                       DefaultValuedAttr<BoolAttr, "false">:$transB);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $a `,` $b `,` $pre_activation attr-dict `:`
    functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Normalisation, activation with an axis, dropout
//===----------------------------------------------------------------------===//

def Weft_SoftmaxOp : Weft_Op<"softmax", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = SoftmaxSplit;
  let flops = PerOutput<5>;
  let summary = "Softmax along `axis` (ONNX Softmax-13).";
  let description = "Cost: 5 FLOPs per element (max, subtract, exp, sum, divide).";
  let arguments = (ins Weft_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Weft_LogSoftmaxOp : Weft_Op<"log_softmax", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = SoftmaxSplit;
  let flops = PerOutput<5>;
  let summary = "Log-softmax along `axis` (ONNX LogSoftmax-13).";
  let description = "Cost: 5 FLOPs per element (max, subtract, exp, sum, log-subtract).";
  let arguments = (ins Weft_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

def Weft_LayerNormOp : Weft_KernelTypedOp<"layer_norm", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = LayerNormSplit;
  let flops = PerInput<8>;
  let summary = "Layer normalisation over dims `[axis, rank)` (ONNX LayerNormalization-17).";
  let description = [{
    `Y = (X - mean) * inv_std_dev * scale + bias`, statistics over the
    trailing dimensions from `axis`. `mean` and `inv_std_dev` have `X`'s shape
    with the normalised dimensions set to 1 (the backward pass needs them),
    in f32, or f64 beside f64 `X` (the float64 oracle's backward reads
    them: in f32 its gradients were 3e-8 off).
    Cost: 8 FLOPs per element of `X`.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Optional<Weft_FloatTensor>:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Weft_FloatTensor:$output, Weft_FloatTensor:$mean,
                      Weft_FloatTensor:$inv_std_dev);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_BatchNormOp : Weft_KernelTypedOp<"batch_norm", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  // The running statistics may update their state buffers in place.
  let inPlace = [Weft_InPlace<1, 3, 0>, Weft_InPlace<2, 4, 0>];
  let summary = "Batch normalisation over channel dim 1 (ONNX BatchNormalization-15).";
  let description = [{
    With `training`, normalises with the batch statistics (population
    variance) and returns the updated running statistics
    `running = momentum * running + (1 - momentum) * batch`. The batch
    variance in that update is the population variance, as the ONNX
    reference computes it, or, with `unbiased_running_var`, the unbiased
    one, as torch.nn.BatchNorm does (set for models torch exported).
    Otherwise normalises with `mean`/`var` and returns them unchanged.
    Cost: 7 FLOPs per element when training, else 4.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$scale,
                       Weft_FloatTensor:$bias, Weft_FloatTensor:$mean,
                       Weft_FloatTensor:$var,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<F64Attr, "0.9">:$momentum,
                       DefaultValuedAttr<BoolAttr, "false">:$training,
                       DefaultValuedAttr<BoolAttr, "false">:$unbiased_running_var);
  let results = (outs Weft_FloatTensor:$output, Weft_FloatTensor:$running_mean,
                      Weft_FloatTensor:$running_var);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_DropoutOp : Weft_KernelTypedOp<"dropout", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = FollowPrecision;
  let split = ElementwiseRandomSplit;
  let flops = CustomFlopRule;
  let planAttrs = Weft_DropoutMaskAttrs;
  let summary = "Dropout with probability `ratio` (ONNX Dropout-13).";
  let description = [{
    When `training` and `ratio > 0`, zeroes each element with probability
    `ratio` and scales the rest by `1/(1-ratio)`; `mask` (i1) records the kept
    elements. Otherwise `output` is `input` and `mask` is all true.
    Cost: 2 FLOPs per element when training, else 0.
  }];
  let arguments = (ins Weft_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "0.5">:$ratio,
                       DefaultValuedAttr<BoolAttr, "false">:$training,
                       OptionalAttr<I64Attr>:$seed);
  let results = (outs Weft_FloatTensor:$output, Weft_BoolTensor:$mask);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_TriluOp : Weft_Op<"trilu", [Pure, SameOperandsAndResultType, DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let summary = "Keep the upper or lower triangle of the last two dims (ONNX Trilu-14).";
  let description = "Cost: 0 FLOPs (a masked copy).";
  let arguments = (ins Weft_Tensor:$input, BoolAttr:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Weft_ReduceSumOp : Weft_ReduceOp<"reduce_sum", "ReduceSum", FullPrecision>;
def Weft_ReduceMeanOp : Weft_ReduceOp<"reduce_mean", "ReduceMean", FullPrecision>;
def Weft_ReduceMaxOp : Weft_ReduceOp<"reduce_max", "ReduceMax", FollowPrecision>;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Weft_ReshapeOp : Weft_InferredOp<"reshape", [DeclareOpInterfaceMethods<GradientOpInterface>,
    DeclareOpInterfaceMethods<SplitLayoutOpInterface>], ["getBytesRead", "getBytesWritten"]> {
  let lowering = ViewLowering;
  let backends = NoKernel;
  let precision = FollowPrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
  let summary = "Reinterpret with a new static `shape` (ONNX Reshape/Flatten/Squeeze/Unsqueeze).";
  let description = "A view: 0 FLOPs, 0 bytes.";
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_TransposeOp : Weft_KernelTypedOp<"transpose", [DeclareOpInterfaceMethods<GradientOpInterface>,
    DeclareOpInterfaceMethods<SplitLayoutOpInterface>]> {
  let precision = FollowPrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
  let summary = "Permute dimensions: result dim i is input dim `perm[i]` (ONNX Transpose-13).";
  let description = [{
    Folds away an identity permutation and a transpose that undoes the
    transpose defining its input, so `weft-autodiff`'s dX = dY x (W^T)^T
    reads the weight W itself rather than keeping the forward's W^T.
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Weft_ExpandOp : Weft_KernelTypedOp<"expand", [DeclareOpInterfaceMethods<GradientOpInterface>,
    DeclareOpInterfaceMethods<SplitLayoutOpInterface>]> {
  let precision = FollowPrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
  let summary = "Broadcast to `shape` (ONNX Expand-13, shape folded and resolved).";
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_ConcatOp : Weft_KernelTypedOp<"concat", [DeclareOpInterfaceMethods<GradientOpInterface>,
    DeclareOpInterfaceMethods<SplitLayoutOpInterface>]> {
  let precision = PromotePrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
  let minInputs = 1;
  let summary = "Concatenate along `axis` (ONNX Concat-13).";
  let arguments = (ins Variadic<Weft_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Weft_SplitOp : Weft_KernelTypedOp<"split", [DeclareOpInterfaceMethods<GradientOpInterface>,
    DeclareOpInterfaceMethods<SplitLayoutOpInterface>]> {
  let precision = FollowPrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
  let summary = "Split along `axis` into pieces of `sizes` (ONNX Split-13).";
  let arguments = (ins Weft_Tensor:$input, I64Attr:$axis,
                       DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Weft_Tensor>:$outputs);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_SliceOp : Weft_KernelTypedOp<"slice", [DeclareOpInterfaceMethods<GradientOpInterface>,
    DeclareOpInterfaceMethods<SplitLayoutOpInterface>], ["getBytesRead"]> {
  let precision = FollowPrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
  let summary = "Strided slice, one (start, end, step) per dim (ONNX Slice-13, normalised).";
  let description = [{
    `starts`, `ends` and `steps` have one entry per dimension, already clamped
    as the ONNX spec prescribes (negative steps end at -1 for "before index 0").
    Result dim i is `max(0, ceil((ends[i] - starts[i]) / steps[i]))`. Reads only
    the selected elements.
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The width of the block of dimension `dim` this slice takes, whole
    /// and aligned (every other dimension whole, step 1, the input's dim a
    /// multiple of it); 0 for any other slice.
    int64_t blockWidth(int64_t dim);
  }];
}

def Weft_GatherOp : Weft_KernelTypedOp<"gather", [DeclareOpInterfaceMethods<GradientOpInterface>], ["getBytesRead"]> {
  let precision = FollowPrecision;
  let split = VocabSplit;
  let flops = NoFlops;
  let summary = "Gather slices of `data` along `axis` (ONNX Gather-13; embedding lookup).";
  let description = [{
    Result shape `data.shape[:axis] + indices.shape + data.shape[axis+1:]`.
    Negative indices count from the end. Reads the indices and the gathered
    rows only, not the whole table.
  }];
  let arguments = (ins Weft_Tensor:$data,
                       Weft_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_PadOp : Weft_KernelTypedOp<"pad", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let summary = "Constant-mode padding (ONNX Pad-13/-18, constant mode).";
  let description = [{
    `pads` is `[x1_begin, x2_begin, ..., x1_end, x2_end]` for every dim;
    negative pads crop. Padded elements hold `value`.
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_ResizeOp : Weft_KernelTypedOp<"resize", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let summary = "Nearest-neighbour resize (ONNX Resize-13, mode nearest).";
  let description = [{
    `sizes` is the output shape; `scales` the per-dim scale used to map output
    to input coordinates (`sizes[i] / input[i]` when ONNX gave sizes).
    `coordinate_transformation_mode` and `nearest_mode` as in the ONNX spec.
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$sizes,
                       DenseF64ArrayAttr:$scales,
                       StrAttr:$coordinate_transformation_mode,
                       StrAttr:$nearest_mode);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW, any number of spatial dims)
//===----------------------------------------------------------------------===//

def Weft_ConvOp : Weft_KernelTypedOp<"conv", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = LowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "Grouped N-d convolution, explicit pads (ONNX Conv-11).";
  let description = [{
    `X: [N, C, D1..Dn]`, `W: [M, C/group, k1..kn]`, `B: [M]`. `pads` is
    `[begin..., end...]` (auto_pad resolved at import). Cost:
    `2 * N * M * prod(out) * (C/group) * prod(k)` FLOPs plus `N*M*prod(out)` for
    the bias.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       Optional<Weft_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_ConvTransposeOp : Weft_KernelTypedOp<"conv_transpose", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = LowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "Grouped N-d transposed convolution (ONNX ConvTranspose-11).";
  let description = [{
    `X: [N, C, D1..Dn]`, `W: [C, M/group, k1..kn]`. Output dim
    `s*(D-1) + op + ((k-1)*d + 1) - pad_begin - pad_end` (output_shape and
    auto_pad resolved into `pads` at import). Cost:
    `2 * N * C * prod(in) * (M/group) * prod(k)` FLOPs plus the bias.
  }];
  let arguments = (ins Weft_FloatTensor:$input, Weft_FloatTensor:$weight,
                       Optional<Weft_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DenseI64ArrayAttr:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$group);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_MaxPoolOp : Weft_KernelTypedOp<"max_pool", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "N-d max pooling (ONNX MaxPool-12).";
  let description = "Cost: `prod(kernel_shape)` FLOPs (compares) per output element.";
  let arguments = (ins Weft_NumericTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs Weft_NumericTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_AvgPoolOp : Weft_KernelTypedOp<"avg_pool", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "N-d average pooling (ONNX AveragePool-11).";
  let description = "Cost: `prod(kernel_shape)` FLOPs per output element.";
  let arguments = (ins Weft_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Weft_SoftmaxCrossEntropyOp : Weft_KernelTypedOp<"softmax_cross_entropy", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = VocabSplit;
  let flops = PerInput<6>;
  let summary = "Softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss-13).";
  let description = [{
    `scores: [N, C, d...]`, `labels: [N, d...]` (integer class ids),
    optional per-class `weights: [C]`. `reduction` is `mean`, `sum` or
    `none`; labels equal to `ignore_index` contribute nothing. `log_prob` is
    the log-softmax of `scores`. `loss` and `log_prob` have the scores'
    element type, or `log_prob_type` (f32 beside 16-bit scores without
    weights: weft-mixed-precision's, autocast's f32 cross entropy read from
    the 16-bit logits without a widened copy). Cost: 6 FLOPs per element of
    `scores`.

    With `log_sum_exp` (weft-fold-loss-log-prob, where nothing reads the
    log-probabilities) the second result is instead each sample's
    `log(sum_c exp(scores[n, c, d...]))`, `[N, d...]` of the same element
    type: the gradient recomputes `log_prob = scores - log_sum_exp` from
    the scores, so the step keeps the scores and one number per sample,
    not an `[N, C, d...]` tensor as wide as `log_prob_type` (Apex's
    xentropy; FlashAttention's statistics, for a loss).
  }];
  let arguments = (ins Weft_FloatTensor:$scores,
                       Weft_IndexTensor:$labels,
                       Optional<Weft_FloatTensor>:$weights,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index,
                       OptionalAttr<TypeAttr>:$log_prob_type,
                       UnitAttr:$log_sum_exp);
  let results = (outs Weft_FloatTensor:$loss, Weft_FloatTensor:$log_prob);
  let assemblyFormat = [{
    $scores `,` $labels (`,` $weights^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_NllLossOp : Weft_KernelTypedOp<"nll_loss", [DeclareOpInterfaceMethods<GradientOpInterface>], CustomFlops> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let summary = "Negative log-likelihood loss (ONNX NegativeLogLikelihoodLoss-13).";
  let description = [{
    `input: [N, C, d...]` log-probabilities, `target: [N, d...]`, optional
    `weight: [C]`; `reduction` and `ignore_index` as in softmax_cross_entropy.
    Cost: 2 FLOPs per element of `target`.
  }];
  let arguments = (ins Weft_FloatTensor:$input,
                       Weft_IndexTensor:$target,
                       Optional<Weft_FloatTensor>:$weight,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Weft_FloatTensor:$loss);
  let assemblyFormat = [{
    $input `,` $target (`,` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

include "weft/Dialect/Weft/IR/WeftMaskOps.td"
include "weft/Dialect/Weft/IR/WeftGradOps.td"
include "weft/Dialect/Weft/IR/WeftAttentionOps.td"
include "weft/Dialect/Weft/IR/WeftTransformerOps.td"
include "weft/Dialect/Weft/IR/WeftOptimizerOps.td"
include "weft/Dialect/Weft/IR/WeftPipelineOps.td"
include "weft/Dialect/Weft/IR/WeftParallelOps.td"

#endif // WEFT_DIALECT_WEFT_IR_WEFTOPS_TD
