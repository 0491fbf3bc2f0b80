//===- InsertSendRecv.cpp - weft-insert-send-recv -------------------------===//
//
// Places unstaged ops, clones the updates of parameters held by several
// stages, and turns every cross-stage value into isend/irecv pairs; see
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "AttributeSets.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

#include <set>

namespace weft {
#define GEN_PASS_DEF_INSERTSENDRECV
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The task a transfer inherits from `from`, on `stage`: its micro-batch
/// and the kind of task that runs it (a recomputation's transfer is the
/// backward's).
void copyTaskAttrs(Operation *from, Operation *to, int64_t stage) {
  TaskFields task = TaskFields::of(from);
  task.kind = scheduledTaskKind(from);
  task.stage = stage;
  setTask(to, task);
}

struct InsertSendRecvPass : weft::impl::InsertSendRecvBase<InsertSendRecvPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kPipelineStagesAttr))
      return;
    placeUnstagedOps(func);
    if (failed(cloneSharedUpdates(func)))
      return signalPassFailure();
    insertTransfers(func);
  }

  /// Latest producer stage; else earliest user stage; else stage 0.
  void placeUnstagedOps(func::FuncOp func) {
    Block &body = func.getBody().front();
    AttributeSets tags(func.getContext());
    SmallVector<Operation *> pending;
    for (Operation &op : body.without_terminator()) {
      if (isa<ConstantOp>(op) || stageOf(&op))
        continue;
      std::optional<int64_t> stage;
      for (Value v : op.getOperands())
        if (Operation *def = v.getDefiningOp())
          if (std::optional<int64_t> s = stageOf(def))
            stage = stage ? std::max(*stage, *s) : *s;
      if (stage)
        tags.setTaskField(&op, AttributeSets::TaskField::Stage, *stage);
      else
        pending.push_back(&op);
    }
    for (Operation *op : llvm::reverse(pending)) {
      std::optional<int64_t> stage;
      for (Operation *user : op->getUsers())
        if (std::optional<int64_t> s = stageOf(user))
          stage = stage ? std::min(*stage, *s) : *s;
      tags.setTaskField(op, AttributeSets::TaskField::Stage, stage.value_or(0));
    }
  }

  /// Clones the optimizer update of a parameter used on several stages onto
  /// each of them, and returns the clones' results like the original's.
  LogicalResult cloneSharedUpdates(func::FuncOp func) {
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> resultAttrs;
    func.getAllResultAttrs(resultAttrs);
    SmallVector<Operation *> updates;
    for (Operation &op : body.without_terminator())
      if (isa<AdamWOp, SGDOp>(op))
        updates.push_back(&op);
    OpBuilder b(ret);
    for (Operation *update : updates) {
      // One update per rank holding the parameter: stages that share a
      // rank (model chunks) share its copy.
      int64_t home = *stageOf(update);
      std::map<int64_t, int64_t> holders; // rank -> its first stage
      for (Operation *user : update->getOperand(0).getUsers())
        if (user != update)
          holders.try_emplace(rankOfStage(func, *stageOf(user)),
                              *stageOf(user));
      holders.erase(rankOfStage(func, home));
      for (auto [rank, stage] : holders) {
        Operation *clone = b.clone(*update);
        TaskFields task = TaskFields::of(clone);
        task.stage = stage;
        setTask(clone, task);
        for (auto [i, v] : llvm::enumerate(ret.getOperands()))
          for (auto [orig, copy] :
               llvm::zip(update->getResults(), clone->getResults()))
            if (v == orig) {
              results.push_back(copy);
              resultAttrs.push_back(resultAttrs[i]);
            }
      }
    }
    if (results.size() == ret.getNumOperands())
      return success();
    replaceReturn(func, results, resultAttrs);
    return success();
  }

  void insertTransfers(func::FuncOp func) {
    // Each stage's rank, looked up once: every use of every value asks.
    int64_t stages =
        func->getAttrOfType<IntegerAttr>(kPipelineStagesAttr).getInt();
    SmallVector<int64_t> rankOf;
    for (int64_t s = 0; s < stages; ++s)
      rankOf.push_back(rankOfStage(func, s));
    auto rankAt = [&](int64_t stage) {
      return stage < stages ? rankOf[stage] : stage;
    };
    Block &body = func.getBody().front();
    Operation *ret = body.getTerminator();
    OpBuilder b(func.getContext());
    int64_t tag = 0;
    SmallVector<Operation *> producers;
    for (Operation &op : body.without_terminator())
      if (!isa<ConstantOp>(op) && !isa<IRecvOp, WaitRecvOp>(op))
        producers.push_back(&op);
    for (Operation *op : producers) {
      int64_t from = *stageOf(op);
      Operation *sendPoint = op;
      for (Value v : op->getResults()) {
        if (!isa<RankedTensorType>(v.getType()))
          continue;
        // Consumers per rank other than the producer's, in program order
        // (a stage on the producer's rank reads the value as it is; one
        // transfer serves every stage of a rank).
        std::map<int64_t, SmallVector<OpOperand *>> uses;
        for (OpOperand &use : v.getUses()) {
          Operation *user = use.getOwner();
          if (user == ret)
            continue;
          int64_t rank = rankAt(*stageOf(user));
          if (rank != rankAt(from))
            uses[rank].push_back(&use);
        }
        for (auto &[rank, list] : uses) {
          b.setInsertionPointAfter(sendPoint);
          auto send = ISendOp::create(b, op->getLoc(), v, rank, tag);
          copyTaskAttrs(op, send, from);
          sendPoint = send;
          b.setInsertionPoint(ret);
          auto wait = WaitSendOp::create(b, op->getLoc(), send, v);
          copyTaskAttrs(op, wait, from);

          Operation *first = list.front()->getOwner();
          for (OpOperand *use : list)
            if (use->getOwner()->isBeforeInBlock(first))
              first = use->getOwner();
          int64_t to = *stageOf(first);
          // A forward value the receiving stage first reads in the backward
          // (selective recompute's recomputation) is received in
          // the producer's task, when it is sent: a pair of ranks posts its
          // transfers in one order at both ends (NCCL matches them by
          // order), and the receiver keeps it, as a kept activation.
          bool early = isForward(op) && runsInBackward(first);
          if (early)
            b.setInsertionPointAfter(send);
          else
            b.setInsertionPoint(first);
          auto recv = IRecvOp::create(b, op->getLoc(), v.getType(),
                                      RequestType::get(b.getContext()),
                                      rankAt(from), tag);
          copyTaskAttrs(early ? op : first, recv, to);
          b.setInsertionPoint(first);
          auto value = WaitRecvOp::create(b, op->getLoc(), recv.getRequest(),
                                          recv.getBuffer());
          copyTaskAttrs(first, value, to);
          for (OpOperand *use : list)
            use->set(value);
          ++tag;
        }
      }
    }
  }
};

} // namespace
