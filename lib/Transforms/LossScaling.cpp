//===- LossScaling.cpp - weft-loss-scaling --------------------------------===//
//
// GradScaler (torch.amp.grad_scaler) checks the gradients `optimizer.step`
// will read, after DDP has averaged them; FSDP's ShardedGradScaler
// all-reduces the verdict, because each rank holds a shard. This pass runs
// once weft-data-parallel and weft-insert-send-recv have settled what each
// update reads and where it runs, and builds the check, the gated updates
// and the scale's update on every pipeline stage.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <map>

namespace weft {
#define GEN_PASS_DEF_LOSSSCALING
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The task (the update's, on `stage`) of the ops this pass creates.
void place(Operation *op, std::optional<int64_t> stage) {
  TaskFields task;
  task.kind = TaskKind::Update;
  task.stage = stage;
  setTask(op, task);
}

/// `update` rebuilt to read the loss scaler and the verdict.
Operation *gated(Operation *update, Value scaler, Value found, OpBuilder &b) {
  b.setInsertionPoint(update);
  Operation *op;
  if (auto adamw = dyn_cast<AdamWOp>(update)) {
    op = AdamWOp::create(
        b, update->getLoc(), adamw.getNewParam().getType(),
        adamw.getNewExpAvg().getType(), adamw.getNewExpAvgSq().getType(),
        adamw.getNewMaster() ? adamw.getNewMaster().getType() : Type(),
        adamw.getParam(), adamw.getGrad(), adamw.getExpAvg(),
        adamw.getExpAvgSq(), adamw.getMaster(), scaler, found,
        adamw.getLrAttr(), adamw.getBeta1Attr(), adamw.getBeta2Attr(),
        adamw.getEpsAttr(), adamw.getWeightDecayAttr());
  } else {
    auto sgd = cast<SGDOp>(update);
    op = SGDOp::create(b, update->getLoc(), sgd.getUpdated().getTypes(),
                       sgd.getParam(), sgd.getGrad(), sgd.getMomentumBuffer(),
                       sgd.getMaster(), scaler, found, sgd.getLrAttr(),
                       sgd.getMomentumAttr(), sgd.getWeightDecayAttr(),
                       sgd.getNesterovAttr());
  }
  // The bookkeeping (task, ZeRO's piece) carries over.
  for (NamedAttribute attr : update->getDiscardableAttrs())
    op->setAttr(attr.getName(), attr.getValue());
  update->replaceAllUsesWith(op->getResults());
  update->erase();
  return op;
}

struct LossScalingPass : weft::impl::LossScalingBase<LossScalingPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    BlockArgument scaler;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kLossScalerAttr))
        scaler = arg;
    if (!scaler)
      return;
    auto mesh = getDeviceMesh(func->getParentOfType<ModuleOp>());
    if (failed(mesh))
      return signalPassFailure();
    Block &body = func.getBody().front();
    // Per pipeline rank: the stages of its model chunks share its scaler
    // and verdict.
    std::map<std::optional<int64_t>, SmallVector<Operation *>> stages =
        updatesByRank(func);
    if (stages.empty()) {
      func.emitError("weft-loss-scaling: no parameter updates to gate: run "
                     "weft-append-optimizer first");
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> scales;
    OpBuilder b(func.getContext());
    for (auto &[stage, updates] : stages) {
      Value found = verdict(func, updates, stage, *mesh, b);
      for (Operation *&update : updates)
        update = gated(update, scaler, found, b);
      sinkAfter(found.getDefiningOp(), updates);
      b.setInsertionPoint(ret);
      // GradScaler's defaults: x2 after 2000 steps without overflow, x0.5
      // on one.
      auto next = UpdateLossScaleOp::create(
          b, func.getLoc(), scaler.getType(), scaler, found,
          b.getF64FloatAttr(2.0), b.getF64FloatAttr(0.5),
          b.getI64IntegerAttr(2000));
      place(next, stage);
      scales.push_back(next);
    }
    // The return reads the gated updates now; each stage's scaler follows.
    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> resultAttrs;
    func.getAllResultAttrs(resultAttrs);
    for (Value scale : scales) {
      results.push_back(scale);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(kUpdateAttr, b.getStringAttr("loss_scaler"))));
    }
    replaceReturn(func, results, resultAttrs);
  }

  /// found_inf of the gradients `updates` read, after the last of them,
  /// then its maximum over every mesh axis whose ranks update differently.
  Value verdict(func::FuncOp func, ArrayRef<Operation *> updates,
                std::optional<int64_t> stage,
                const std::optional<DeviceMesh> &mesh, OpBuilder &b) {
    Block &body = func.getBody().front();
    llvm::SetVector<Value> grads;
    for (Operation *update : updates)
      grads.insert(update->getOperand(1));
    Operation *last = nullptr;
    for (Value g : grads)
      if (Operation *def = g.getDefiningOp())
        if (!last || last->isBeforeInBlock(def))
          last = def;
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(&body);
    auto check = FoundInfOp::create(b, func.getLoc(),
                                    RankedTensorType::get({}, b.getF32Type()),
                                    grads.getArrayRef());
    place(check, stage);
    Value found = check;
    if (!mesh)
      return found;
    for (StringRef axis : {"data", "tensor", "pipeline"}) {
      if (mesh->sizeOf(axis) < 2)
        continue;
      auto max = shard::AllReduceOp::create(
          b, func.getLoc(), found, kMeshSymbol,
          ArrayRef<shard::GridAxis>{shard::GridAxis(mesh->axisIndex(axis))},
          shard::ReductionKind::Max);
      place(max, stage);
      found = max;
    }
    return found;
  }
};

} // namespace
