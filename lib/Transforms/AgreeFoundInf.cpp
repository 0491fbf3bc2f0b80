//===- AgreeFoundInf.cpp - weft-agree-found-inf ---------------------------===//
//
// GradScaler (torch.amp.grad_scaler) checks the gradients that
// `optimizer.step` will read, after DDP has averaged them, and FSDP's
// ShardedGradScaler all-reduces the verdict, because each rank holds a
// shard. weft-append-optimizer checks the accumulated gradients before
// weft-data-parallel rewrites the updates; this pass moves the check to
// what the updates read now and makes it the mesh's maximum.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_AGREEFOUNDINF
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct AgreeFoundInfPass
    : weft::impl::AgreeFoundInfBase<AgreeFoundInfPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FoundInfOp check;
    func.walk([&](FoundInfOp op) { check = op; });
    if (!check)
      return;
    Block &body = func.getBody().front();

    // The gradients the updates read now, once each.
    llvm::SetVector<Value> grads;
    for (Operation &op : body)
      if (isa<AdamWOp, SGDOp>(op))
        grads.insert(op.getOperand(1));
    check->setOperands(grads.getArrayRef());

    // After the last of them (block arguments are defined at the start).
    Operation *last = nullptr;
    for (Value g : grads)
      if (Operation *def = g.getDefiningOp())
        if (!last || last->isBeforeInBlock(def))
          last = def;
    if (last)
      check->moveAfter(last);
    else
      check->moveBefore(&body.front());

    // The maximum over the axes whose ranks hold different gradients.
    OpBuilder b(check->getContext());
    b.setInsertionPointAfter(check);
    Value found = check.getFound();
    Operation *tail = check;
    auto mesh = getDeviceMesh(func->getParentOfType<ModuleOp>());
    if (failed(mesh))
      return signalPassFailure();
    if (*mesh)
      for (StringRef axis : {"data", "tensor"}) {
        if ((*mesh)->sizeOf(axis) < 2)
          continue;
        auto max = shard::AllReduceOp::create(
            b, check.getLoc(), found, kMeshSymbol,
            ArrayRef<shard::GridAxis>{
                shard::GridAxis((*mesh)->axisIndex(axis))},
            shard::ReductionKind::Max);
        max->setAttr(kPhaseAttr, b.getStringAttr("optimizer"));
        found = max.getResult();
        tail = max;
      }
    for (Operation *user : llvm::to_vector(check->getUsers()))
      if (user != tail && !isa<shard::AllReduceOp>(user))
        user->replaceUsesOfWith(check.getFound(), found);

    // Every update, and whatever reads it, after the verdict, in order.
    llvm::SetVector<Operation *> sink;
    for (Operation &op : body)
      if (isa<AdamWOp, SGDOp, UpdateLossScaleOp>(op) &&
          op.isBeforeInBlock(tail))
        sink.insert(&op);
    for (size_t i = 0; i < sink.size(); ++i)
      for (Operation *user : sink[i]->getUsers())
        if (user->getBlock() == &body && user->isBeforeInBlock(tail) &&
            !isa<func::ReturnOp>(user))
          sink.insert(user);
    SmallVector<Operation *> ordered(sink.begin(), sink.end());
    llvm::sort(ordered, [](Operation *a, Operation *c) {
      return a->isBeforeInBlock(c);
    });
    Operation *after = tail;
    for (Operation *op : ordered) {
      op->moveAfter(after);
      after = op;
    }
  }
};

} // namespace
