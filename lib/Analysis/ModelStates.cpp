//===- ModelStates.cpp - a rank's model-state bytes (ZeRO) ----------------===//

#include "weft/Analysis/ModelStates.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace weft;

ModelStates weft::modelStates(func::FuncOp func) {
  ModelStates states;
  bool zero = false;
  func.walk([&](Operation *op) { zero |= op->hasAttr(kZeroStageAttr); });
  llvm::DenseSet<Value> params;
  func.walk([&](Operation *op) {
    if (!isa<SGDOp, AdamWOp>(op))
      return;
    Value param = op->getOperand(0), grad = op->getOperand(1);
    // The state: moments, momentum buffer, master copy (not the loss
    // scaler's 12 bytes nor found_inf, which every update shares).
    int64_t state = 0;
    for (auto [operand, result] : optimizerState(op))
      state += byteSize(operand.getType());
    auto stage = op->getAttrOfType<IntegerAttr>(kZeroStageAttr);
    auto shape = op->getAttrOfType<DenseI64ArrayAttr>(kFlatShardAttr);
    if (stage && shape) {
      // A piece of s elements of a tensor of n (ZeRO).
      int64_t s = numElements(param.getType());
      int64_t bytes = byteSize(param.getType()) / std::max<int64_t>(s, 1);
      int64_t n = 1;
      for (int64_t d : shape.asArrayRef())
        n *= d;
      // The parameter is a piece when its argument is (stage 3, and
      // stages 1 and 2 with --zero-prefetch).
      auto arg = dyn_cast<BlockArgument>(param);
      bool piece =
          arg && func.getArgAttr(arg.getArgNumber(), kFlatShardAttr);
      states.params += (piece ? s : n) * bytes;
      states.gradients += (stage.getInt() >= 2 ? s : n) * bytes;
      states.optimizerState += state;
      states.paramCount += n;
      return;
    }
    if (!params.insert(param).second)
      return;
    int64_t total = byteSize(param.getType()) + byteSize(grad.getType());
    states.params += byteSize(param.getType());
    states.gradients += byteSize(grad.getType());
    states.optimizerState += state;
    states.paramCount += numElements(param.getType());
    if (zero) {
      states.replicatedBytes += total + state;
      states.replicatedCount += numElements(param.getType());
    }
  });
  return states;
}

void weft::printModelStates(const ModelStates &s, llvm::raw_ostream &os,
                            llvm::StringRef indent) {
  os << llvm::formatv("{0}model states: parameters {1} + gradients {2} + "
                      "optimizer state {3} = {4} bytes (Ψ = {5})\n",
                      indent, s.params, s.gradients, s.optimizerState,
                      s.total(), s.paramCount);
  if (s.replicatedCount)
    os << llvm::formatv("{0}  of which replicated (under "
                        "--optimizer-shard-threshold): {1} bytes (Ψ = {2})\n",
                        indent, s.replicatedBytes, s.replicatedCount);
}
