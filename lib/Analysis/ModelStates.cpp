//===- ModelStates.cpp - a rank's model-state bytes (ZeRO) ----------------===//

#include "weft/Analysis/ModelStates.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace weft;

namespace {

/// The bucket collective (weft.bucket) a sharded update's gradient comes
/// from, through its 1/D scale and its wait; null for any other gradient.
Operation *bucketCollective(Value grad) {
  Operation *op = grad.getDefiningOp();
  while (op && !op->hasAttr(kBucketAttr)) {
    if (!isa<MulOp, WaitCollectiveOp>(op))
      return nullptr;
    op = op->getOperand(0).getDefiningOp();
  }
  return op && isa<shard::ReduceScatterOp>(op) ? op : nullptr;
}

} // namespace

ModelStates weft::modelStates(func::FuncOp func) {
  ModelStates states;
  llvm::DenseSet<Value> params;
  llvm::DenseSet<Operation *> buckets;
  func.walk([&](Operation *op) {
    if (!isa<SGDOp, AdamWOp>(op))
      return;
    Value grad = op->getOperand(1);
    if (Operation *scatter = bucketCollective(grad)) {
      if (buckets.insert(scatter).second)
        states.gradients += byteSize(scatter->getOperand(0).getType());
    } else {
      states.gradients += byteSize(grad.getType());
    }
  });
  // The parameters: what the updates write, directly or through assign.
  func.walk([&](Operation *op) {
    Value param;
    if (isa<SGDOp, AdamWOp>(op) && isa<BlockArgument>(op->getOperand(0)))
      param = op->getOperand(0);
    if (auto assign = dyn_cast<AssignOp>(op))
      param = assign.getDest();
    if (param && params.insert(param).second) {
      states.params += byteSize(param.getType());
      states.paramCount += numElements(param.getType());
    }
  });
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), kOptimizerStateAttr))
      states.optimizerState += byteSize(arg.getType());
  return states;
}

void weft::printModelStates(const ModelStates &s, llvm::raw_ostream &os,
                            llvm::StringRef indent) {
  os << llvm::formatv("{0}model states: parameters {1} + gradients {2} + "
                      "optimizer state {3} = {4} bytes (Ψ = {5})\n",
                      indent, s.params, s.gradients, s.optimizerState,
                      s.total(), s.paramCount);
}
