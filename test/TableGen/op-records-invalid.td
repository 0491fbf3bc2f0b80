// An op whose record leaves a column unset, or that is not named
// Weft_<Id>Op, does not build: weft-tblgen names it.
// RUN: not weft-tblgen %weft_td_includes -DUNSET %s 2>&1 | FileCheck %s --check-prefix=UNSET
// RUN: not weft-tblgen %weft_td_includes -DMISSPELT %s 2>&1 | FileCheck %s --check-prefix=MISSPELT
// RUN: not weft-tblgen %weft_td_includes -DNAME %s 2>&1 | FileCheck %s --check-prefix=NAME

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
