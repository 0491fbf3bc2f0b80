//===- ParameterReach.h - which parameter a value is computed from -*- C++
//-*-===//
//
// Fused ops that take no gradient for an operand (rotary tables, an
// attention bias) may only read values no parameter reaches.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_PARAMETERREACH_H
#define WEFT_ANALYSIS_PARAMETERREACH_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Value.h"

namespace weft {

/// The name (weft.param) of a parameter `v` is computed from, walking its
/// operands back to the function's arguments; null when it is computed
/// from constants, inputs and state alone. An argument of a block that is
/// not a function's counts as a parameter ("<block argument>"): nothing is
/// known of it.
mlir::StringAttr parameterReaching(mlir::Value v);

} // namespace weft

#endif // WEFT_ANALYSIS_PARAMETERREACH_H
