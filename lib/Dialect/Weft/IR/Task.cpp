//===- Task.cpp - verifying an op's task attributes -----------------------===//

#include "weft/Dialect/Weft/IR/Task.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace {

/// A non-negative i64 index, or an error naming `name`.
LogicalResult verifyIndex(Operation *op, NamedAttribute attr) {
  auto index = dyn_cast<IntegerAttr>(attr.getValue());
  if (!index || !index.getType().isSignlessInteger(64) || index.getInt() < 0)
    return op->emitOpError("'")
           << attr.getName().getValue()
           << "' must be a non-negative i64 index, not " << attr.getValue();
  return success();
}

/// A pipelined function's ops against its stage count and, on a stage
/// function, its stage and micro-batch count: one walk of the function
/// here rather than a lookup of the function per op.
LogicalResult verifyPipelinedFunction(Operation *func, int64_t stages) {
  auto ownStage = func->getAttrOfType<IntegerAttr>(weft::kStageAttr);
  auto microBatches = func->getAttrOfType<IntegerAttr>(weft::kMicroBatchesAttr);
  for (Region &region : func->getRegions())
    for (Block &block : region)
      for (Operation &op : block) {
        if (std::optional<int64_t> stage = weft::stageOf(&op)) {
          if (*stage >= stages)
            return op.emitOpError("is on stage ")
                   << *stage << " of a function with " << stages
                   << " pipeline stages";
          if (ownStage && *stage != ownStage.getInt())
            return op.emitOpError("is on stage ")
                   << *stage << ", in the function of stage "
                   << ownStage.getInt();
        }
        if (std::optional<int64_t> mb = weft::microBatchOf(&op);
            mb && microBatches && *mb >= microBatches.getInt())
          return op.emitOpError("belongs to micro-batch ")
                 << *mb << " of a step with " << microBatches.getInt()
                 << " micro-batches";
      }
  return success();
}

} // namespace

LogicalResult weft::verifyTaskAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kPhaseAttr) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (!phase || !llvm::is_contained({"forward", "backward", "optimizer"},
                                      phase.getValue()))
      return op->emitOpError("'")
             << kPhaseAttr
             << "' must be \"forward\", \"backward\" or \"optimizer\", not "
             << attr.getValue();
    if (phase.getValue() == "optimizer" && op->hasAttr(kMicroBatchAttr))
      return op->emitOpError("is an optimizer update, which belongs to no "
                             "micro-batch, but has "
                             "'")
             << kMicroBatchAttr << "'";
    return success();
  }
  if (name == kRecomputeAttr) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError("'") << kRecomputeAttr << "' is a unit attribute";
    if (taskKindOf(op) != TaskKind::Recompute)
      return op->emitOpError("'")
             << kRecomputeAttr
             << "' marks a forward recomputed in the backward: the op's '"
             << kPhaseAttr << "' must be \"backward\"";
    return success();
  }
  if (name == kMicroBatchAttr || name == kStageAttr)
    return verifyIndex(op, attr);
  if (name == kPipelineStagesAttr) {
    auto stages = dyn_cast<IntegerAttr>(attr.getValue());
    if (!stages || stages.getInt() < 1)
      return op->emitOpError("'")
             << kPipelineStagesAttr << "' must be a positive integer, not "
             << attr.getValue();
    return verifyPipelinedFunction(op, stages.getInt());
  }
  return success();
}
