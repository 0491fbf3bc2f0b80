// An op whose record leaves a column unset, or that is not named
// Weft_<Id>Op, does not build: weft-tblgen names it.
// RUN: not weft-tblgen %weft_td_includes -DUNSET %s 2>&1 | FileCheck %s --check-prefix=UNSET
// RUN: not weft-tblgen %weft_td_includes -DMISSPELT %s 2>&1 | FileCheck %s --check-prefix=MISSPELT
// RUN: not weft-tblgen %weft_td_includes -DNAME %s 2>&1 | FileCheck %s --check-prefix=NAME
// A kernel's plan signature: an attribute the plan cannot carry and that
// compilerAttrs does not name, a compilerAttrs entry that names nothing,
// bounds wider than the operands, a default that is not a literal.
// RUN: not weft-tblgen %weft_td_includes -DKIND %s 2>&1 | FileCheck %s --check-prefix=KIND
// RUN: not weft-tblgen %weft_td_includes -DCOMPILER %s 2>&1 | FileCheck %s --check-prefix=COMPILER
// RUN: not weft-tblgen %weft_td_includes -DWIDEN %s 2>&1 | FileCheck %s --check-prefix=WIDEN
// RUN: not weft-tblgen %weft_td_includes -DDEFAULT %s 2>&1 | FileCheck %s --check-prefix=DEFAULT
// An operand without a dtype set, a variadic operand before another, an
// in-place pair naming no result.
// RUN: not weft-tblgen %weft_td_includes -DDTYPE %s 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not weft-tblgen %weft_td_includes -DVARIADIC %s 2>&1 | FileCheck %s --check-prefix=VARIADIC
// RUN: not weft-tblgen %weft_td_includes -DINPLACE %s 2>&1 | FileCheck %s --check-prefix=INPLACE

include "weft/Dialect/Weft/IR/WeftBase.td"

#ifdef UNSET
// UNSET: error: weft.scale: its record leaves `split` unset (WeftBase.td lists the values)
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let flops = PerInput<3>;
}
#endif

#ifdef MISSPELT
// A column's values are TableGen defs: a misspelt one does not parse.
// MISSPELT: error: Variable not defined: 'FulPrecision'
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FulPrecision;
  let split = NoSplit;
  let flops = NoFlops;
}
#endif

#ifdef NAME
// NAME: error: weft op definition 'ScaleOp' is not named Weft_<Id>Op
def ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
}
#endif

#ifdef KIND
// KIND: error: weft.scale: attribute 'grid' has no plan kind; list it in compilerAttrs if the plan does not carry it
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let arguments = (ins Weft_Tensor:$input, FlatSymbolRefAttr:$grid);
}
#endif

#ifdef COMPILER
// COMPILER: error: weft.scale: compilerAttrs names 'grid', which is not an attribute of it
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let compilerAttrs = ["grid"];
  let arguments = (ins Weft_Tensor:$input);
}
#endif

#ifdef WIDEN
// WIDEN: error: weft.scale: minInputs/maxInputs widen its ODS operand counts
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let maxInputs = 3;
  let arguments = (ins Weft_Tensor:$input, Optional<Weft_Tensor>:$bias);
}
#endif

#ifdef DEFAULT
// DEFAULT: error: weft.scale: the default of 'perm' is not a plain literal
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let arguments = (ins Weft_Tensor:$input,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{0, 1}">:$perm);
}
#endif

#ifdef DTYPE
// DTYPE: error: weft.scale: operand 'input' is not a Weft_TensorOf (no dtype set)
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let arguments = (ins AnyTensor:$input);
}
#endif

#ifdef VARIADIC
// VARIADIC: error: weft.scale: a variadic operand must be last
def Weft_ScaleOp : Weft_Op<"scale", [AttrSizedOperandSegments]> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let arguments = (ins Variadic<Weft_Tensor>:$inputs, Weft_Tensor:$last);
}
#endif

#ifdef INPLACE
// INPLACE: error: weft.scale: in-place pair (1, 0) names no result or operand
def Weft_ScaleOp : Weft_Op<"scale"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let inPlace = [Weft_InPlace<1, 0>];
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$output);
}
#endif
