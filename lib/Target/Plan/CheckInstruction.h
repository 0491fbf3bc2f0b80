//===- CheckInstruction.h - private to plan emission ------------*- C++ -*-===//
#ifndef WEFT_LIB_TARGET_PLAN_CHECKINSTRUCTION_H
#define WEFT_LIB_TARGET_PLAN_CHECKINSTRUCTION_H

#include "weft/ops/OpCheck.h"

#include "mlir/IR/Operation.h"

#include <nlohmann/json.hpp>

namespace weft {

/// Checks compute instruction `inst` of `op` (its operands named by id,
/// `operand` gives each as placed in the arena) as weft-run's plan loader will
/// (weft/ops/OpCheck.h), so that weftc never writes a plan weft-run
/// refuses; and holds the op's CostOpInterface FLOPs to the kernel
/// specification's, the two readings of one rule. Errors name the op and
/// its ONNX node.
mlir::LogicalResult
checkInstruction(mlir::Operation &op, const nlohmann::json &inst,
                 llvm::function_ref<ops::OperandDesc(int64_t)> operand);

} // namespace weft

#endif // WEFT_LIB_TARGET_PLAN_CHECKINSTRUCTION_H
