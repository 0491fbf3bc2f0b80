// weft-tblgen writes one WEFT_OP line per op from the columns its definition
// states; the gradient column is Rule exactly when the op declares
// GradientOpInterface, and defaults fill lowering and backends.
// RUN: weft-tblgen %weft_td_includes %s | FileCheck %s

include "weft/Dialect/Weft/IR/WeftBase.td"

// CHECK: // op-records.td
// CHECK-NEXT: WEFT_OP(Scale, "scale", Kernel, CpuCuda, Rule, Full, Elementwise, PerInput(3))
def Weft_ScaleOp : Weft_Op<"scale", [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = ElementwiseSplit;
  let flops = PerInput<3>;
}

// CHECK-NEXT: WEFT_OP(ScaleGrad, "scale_grad", Kernel, CpuOnly, NotDifferentiable, Follow, None, Custom)
def Weft_ScaleGradOp : Weft_Op<"scale_grad", [], CustomFlops> {
  let backends = CpuOnlyKernel;
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
}

// CHECK-NEXT: WEFT_OP(Alias, "alias", View, NoKernel, Rule, Follow, Layout, NoFlops)
def Weft_AliasOp : Weft_Op<"alias", [Pure,
    TraitList<[DeclareOpInterfaceMethods<GradientOpInterface>]>]> {
  let lowering = ViewLowering;
  let backends = NoKernel;
  let precision = FollowPrecision;
  let split = LayoutSplit;
  let flops = NoFlops;
}
// CHECK-EMPTY:
// CHECK-NEXT: #undef WEFT_OP
