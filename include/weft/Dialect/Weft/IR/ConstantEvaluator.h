//===- ConstantEvaluator.h - fold kernel ops on known operands --*- C++ -*-===//
//
// The one constant evaluator of the compiler: a kernel op whose operands are
// all `weft.constant`s is evaluated by running its CPU kernel, the one
// weft-run would run (weft/runtime/Evaluate.h), on their values. The importer
// folds every such op as it builds it, whatever ONNX operator it came from:
// shape arithmetic, the causal and padding masks exporters trace into the
// graph, `If` conditions.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_CONSTANTEVALUATOR_H
#define WEFT_DIALECT_WEFT_IR_CONSTANTEVALUATOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace weft {

/// The values of `op`'s results for operand values `operands` (one per
/// operand, in order) when `op` lowers to a CPU kernel and no result has
/// more than `maxElements` elements, or is a view (a reshape: its
/// operand's elements under its type, at any size); nullopt otherwise. When the
/// kernel itself refuses the values (an index out of range: weft-run would fail
/// at run time), nullopt with its message in `*refusal`; operands its rule
/// refuses are left to the op's verifier. Elements: f32, f64, integers and
/// bool (i1); 16-bit floats are not folded.
std::optional<llvm::SmallVector<mlir::DenseElementsAttr>>
evaluateConstantOp(mlir::Operation *op,
                   llvm::ArrayRef<mlir::DenseElementsAttr> operands,
                   int64_t maxElements, std::string *refusal = nullptr);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_CONSTANTEVALUATOR_H
