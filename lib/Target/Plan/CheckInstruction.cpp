//===- CheckInstruction.cpp - a plan instruction against weft-run's check -===//

#include "CheckInstruction.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/ops/OpCheck.h"

using namespace mlir;
using json = nlohmann::json;

LogicalResult
weft::checkInstruction(Operation &op, const json &inst,
                       llvm::function_ref<ops::OperandDesc(int64_t)> operand) {
  auto operands = [&](const json &ids) {
    std::vector<ops::OperandDesc> descs;
    for (const json &id : ids)
      descs.push_back(operand(id.get<int64_t>()));
    return descs;
  };
  std::string kernel = inst["kernel"].get<std::string>();
  ops::InstructionCost cost;
  std::string error =
      ops::checkInstruction(kernel, operands(inst["inputs"]),
                            operands(inst["outputs"]), inst["attrs"], &cost);
  if (!error.empty())
    return op.emitError("plan emission: weft-run would refuse this ")
           << op.getName() << " (node '" << inst["name"].get<std::string>()
           << "'): " << error;
  auto costed = dyn_cast<CostOpInterface>(op);
  if (!costed || kernel != op.getName().stripDialect())
    return success();
  if (costed.getFlops() != cost.flops)
    return op.emitError("plan emission: ")
           << op.getName() << " counts " << costed.getFlops()
           << " FLOPs, its kernel specification " << cost.flops
           << " (one of the two readings of its rule is wrong)";
  if (costed.getBytesRead() != cost.bytesRead ||
      costed.getBytesWritten() != cost.bytesWritten)
    return op.emitError("plan emission: ")
           << op.getName() << " reads " << costed.getBytesRead()
           << " and writes " << costed.getBytesWritten()
           << " bytes, its kernel specification " << cost.bytesRead
           << " and " << cost.bytesWritten
           << " (one of the two readings of its rule is wrong)";
  return success();
}
