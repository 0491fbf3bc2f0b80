//===- WeftMaskOps.td - what exporters trace masks with ------*- tablegen -*-===//
//
// The ops of the subgraphs exporters trace around attention: comparisons
// and logic that build causal, sliding-window and padding masks, the float
// tests of torch's softmax guard, the cumulative sums of OPT's positions and
// the element gathers of GPT-NeoX's rotary tables. With compile-time
// operands the importer folds them (ConstantEvaluator.h); otherwise they are
// ops on runtime values like any other. gather_elements' gradient is in
// WeftGradOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTMASKOPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTMASKOPS_TD

include "weft/Dialect/Weft/IR/WeftBase.td"

def Weft_CompareOp : Weft_KernelTypedOp<"compare", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = PromotePrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Elementwise order comparison with numpy broadcasting; bool result.";
  let description = [{
    `predicate` is one of `less`, `less_equal`, `greater`, `greater_equal`:
    ONNX Less-13, LessOrEqual-16, Greater-13, GreaterOrEqual-16. Operands
    of one dtype; floats compare as numbers (any comparison with NaN is
    false). The exporters trace causal and sliding-window masks with them
    (`position <= query position`); with constant operands the importer
    folds them. No derivative. Cost: 1 FLOP per result element.
  }];
  let arguments = (ins Weft_NumericTensor:$lhs, Weft_NumericTensor:$rhs,
                       StrAttr:$predicate);
  let results = (outs Weft_BoolTensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_LogicalOp : Weft_KernelTypedOp<"logical", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = PromotePrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Elementwise `and`, `or` or `xor` of bools with numpy broadcasting.";
  let description = [{
    ONNX And-7, Or-7, Xor-7 (`kind`). Masks combine with them (causal and
    padding). No derivative. Cost: 1 FLOP per result element.
  }];
  let arguments = (ins Weft_BoolTensor:$lhs, Weft_BoolTensor:$rhs,
                       StrAttr:$kind);
  let results = (outs Weft_BoolTensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Weft_NotOp : Weft_Op<"not", [Pure, SameOperandsAndResultType,
                                 DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Elementwise logical negation of a bool tensor (ONNX Not-1).";
  let description = "No derivative. Cost: 1 FLOP per element.";
  let arguments = (ins Weft_BoolTensor:$input);
  let results = (outs Weft_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

def Weft_IsNaNOp : Weft_KernelTypedOp<"is_nan", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Elementwise `x != x` as bool (ONNX IsNaN-20).";
  let description = [{
    torch's exporter guards scaled_dot_product_attention's softmax with
    `where(isnan(p), 0, p)` (a fully masked row). No derivative. Cost: 1
    FLOP per element.
  }];
  let arguments = (ins Weft_FloatTensor:$input);
  let results = (outs Weft_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_IsInfOp : Weft_KernelTypedOp<"is_inf", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Elementwise infinity test as bool (ONNX IsInf-20).";
  let description = [{
    True where the element is +inf (with `detect_positive`) or -inf (with
    `detect_negative`). No derivative. Cost: 1 FLOP per element.
  }];
  let arguments = (ins Weft_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive);
  let results = (outs Weft_BoolTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_CumSumOp : Weft_KernelTypedOp<"cumsum", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = PerOutput<1>;
  let summary = "Cumulative sum along `axis` (ONNX CumSum-14, axis folded).";
  let description = [{
    `y[.., i, ..] = sum of x[.., j, ..]` over j <= i (j < i when
    `exclusive`; j >= i, or j > i, when `reverse`). OPT's learned positions
    (`cumsum(attention_mask) * attention_mask - 1`) are traced so, and fold
    at import when the mask is a constant. The gradient is the cumulative
    sum of dy the other way (`reverse` flipped). Cost: 1 FLOP per element.
  }];
  let arguments = (ins Weft_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Weft_NumericTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Weft_GatherElementsOp : Weft_KernelTypedOp<"gather_elements", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let summary = "Gather single elements of `data` along `axis` (ONNX GatherElements-13).";
  let description = [{
    `output[p] = data[p with p[axis] = indices[p]]` for every position p of
    `indices`, which has `data`'s rank and no larger dims off the axis; the
    result has `indices`' shape. Negative indices count from the end.
    GPT-NeoX's rotary tables are gathered by position ids so (folded at
    import when both are constants). Gradient: weft.gather_elements_grad.
  }];
  let arguments = (ins Weft_Tensor:$data, Weft_IndexTensor:$indices,
                       I64Attr:$axis);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = [{
    $data `,` $indices attr-dict `:` functional-type(operands, results)
  }];
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTMASKOPS_TD
