//===- ModelSummary.cpp - parameter, FLOP and op counts of a model --------===//

#include "weft/Analysis/ModelSummary.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

using namespace mlir;

weft::ModelSummary weft::summarizeModel(func::FuncOp func) {
  ModelSummary summary;
  for (BlockArgument arg : func.getArguments()) {
    int64_t bytes = byteSize(arg.getType());
    if (func.getArgAttr(arg.getArgNumber(), kParamAttr)) {
      summary.params += numElements(arg.getType());
      summary.paramBytes += bytes;
    } else if (func.getArgAttr(arg.getArgNumber(), kStateAttr)) {
      summary.stateBytes += bytes;
      if (func.getArgAttr(arg.getArgNumber(), kFrozenAttr)) {
        summary.frozen += numElements(arg.getType());
        summary.frozenBytes += bytes;
      }
    } else {
      summary.inputBytes += bytes;
    }
  }
  func.walk([&](Operation *op) {
    if (op == func.getOperation() || isa<func::ReturnOp>(op))
      return;
    ++summary.opCounts[op->getName().getStringRef().str()];
    if (auto cost = dyn_cast<CostOpInterface>(op)) {
      summary.flops += cost.getFlops();
      summary.bytesRead += cost.getBytesRead();
      summary.bytesWritten += cost.getBytesWritten();
    }
  });
  return summary;
}

bool weft::isTrainable(func::FuncOp func) {
  auto results = func.getResultTypes();
  bool scalarLoss =
      results.size() == 1 &&
      cast<RankedTensorType>(results[0]).getRank() == 0 &&
      isa<FloatType>(cast<RankedTensorType>(results[0]).getElementType());
  bool hasParams = llvm::any_of(func.getArguments(), [&](BlockArgument arg) {
    return func.getArgAttr(arg.getArgNumber(), kParamAttr) != nullptr;
  });
  return scalarLoss && hasParams;
}
