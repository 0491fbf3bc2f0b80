// weft-tblgen writes one WEFT_OP line per op from the columns its definition
// states; the gradient column is Rule exactly when the op declares
// GradientOpInterface, and defaults fill lowering and backends. A kernel op
// gets its plan signature: input counts from its operands, one attribute
// line per ODS attribute (less compilerAttrs) and per planAttrs entry.
// RUN: weft-tblgen %weft_td_includes %s | FileCheck %s

include "weft/Dialect/Weft/IR/WeftBase.td"

// CHECK: // op-records.td
// CHECK-NEXT: WEFT_OP(Scale, "scale", Kernel, CpuCuda, Rule, Full, Elementwise, PerInput(3))
// CHECK-NEXT: WEFT_OP_INPUTS(Scale, 2, 3)
// CHECK-NEXT: WEFT_OP_DTYPES(Scale, Float, Index, Float)
// CHECK-NEXT: WEFT_OP_INPLACE(Scale, 0, 2, false)
// CHECK-NEXT: WEFT_OP_COMPILER_ATTR(Scale, "grid")
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "axis", Int, Required, )
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "epsilon", Float, Defaulted, 1.0e-5)
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "mode", String, Defaulted, "mean")
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "seed", Int, Optional, )
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "fused", Bool, Defaulted, false)
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "to", String, Required, )
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "perm", Ints, Required, )
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "rng_id", Int, Optional, )
// CHECK-NEXT: WEFT_OP_ATTR(Scale, "start", Int, Required, )
def Weft_ScaleOp : Weft_Op<"scale", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = ElementwiseSplit;
  let flops = PerInput<3>;
  let compilerAttrs = ["grid"];
  let planAttrs = [Weft_PlanAttr<"rng_id", "Int">,
                   Weft_PlanAttr<"start", "Int", 1>];
  let inPlace = [Weft_InPlace<0, 2, 0>];
  let arguments = (ins Weft_FloatTensor:$input, Weft_IndexTensor:$labels,
                       Optional<Weft_FloatTensor>:$bias,
                       I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       DefaultValuedAttr<StrAttr, "\"mean\"">:$mode,
                       OptionalAttr<I64Attr>:$seed, UnitAttr:$fused,
                       TypeAttr:$to, DenseI64ArrayAttr:$perm,
                       FlatSymbolRefAttr:$grid);
  let results = (outs Weft_FloatTensor:$output);
}

// CHECK-NEXT: WEFT_OP(ScaleGrad, "scale_grad", Kernel, CpuOnly, NotDifferentiable, Follow, None, Custom)
// CHECK-NEXT: WEFT_OP_INPUTS(ScaleGrad, 1, -1)
// CHECK-NEXT: WEFT_OP_DTYPES(ScaleGrad, Float)
// CHECK-NEXT: WEFT_OP(Accumulate, "accumulate", Kernel, CpuCuda, NotDifferentiable, Follow, None, NoFlops)
// CHECK-NEXT: WEFT_OP_INPUTS(Accumulate, 2, 4)
// CHECK-NEXT: WEFT_OP_DTYPES(Accumulate, Bool, Float)
def Weft_ScaleGradOp : Weft_Op<"scale_grad", [], CustomFlops> {
  let backends = CpuOnlyKernel;
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let minInputs = 1;
  let arguments = (ins Variadic<Weft_FloatTensor>:$grads);
}
def Weft_AccumulateOp : Weft_Op<"accumulate"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let maxInputs = 4;
  let arguments = (ins Weft_BoolTensor:$a, Weft_FloatTensor:$b,
                       Variadic<Weft_FloatTensor>:$rest);
}

// Not a kernel: no signature lines.
// CHECK-NEXT: WEFT_OP(Alias, "alias", View, NoKernel, Rule, Follow, Layout, NoFlops)
def Weft_AliasOp : Weft_Op<"alias", [Pure,
    TraitList<[DeclareOpInterfaceMethods<GradientOpInterface>]>]> {
  let lowering = ViewLowering;
  let backends = NoKernel;
  let precision = FollowPrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
  let arguments = (ins Weft_Tensor:$input, I64Attr:$axis);
}
// CHECK-EMPTY:
// CHECK-NEXT: #undef WEFT_OP
