//===- DataParallel.cpp - weft-data-parallel ------------------------------===//
//
// Averages the gradients over the mesh's data axis the way PyTorch's
// DistributedDataParallel does (Li et al., VLDB 2020): gradients grouped
// into buckets in the order they become ready (weft/Analysis/
// GradientBuckets.h), one all-reduce per bucket posted once its last
// gradient (its last micro-batch's contribution) exists. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "HoistAccumulation.h"
#include "ShardedBucket.h"

#include "weft/Analysis/GradientBuckets.h"
#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/Transforms/FuncUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_DATAPARALLEL
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct DataParallelPass : weft::impl::DataParallelBase<DataParallelPass> {
  using DataParallelBase::DataParallelBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto mesh = getDeviceMesh(func->getParentOfType<ModuleOp>());
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh || (*mesh)->sizeOf("data") == 1)
      return;
    replicas = (*mesh)->sizeOf("data");
    axis = (*mesh)->axisIndex("data");
    data = {axis, replicas, kMeshSymbol, axis, replicas, -1};
    // weft-autodiff's seed of 1/D: the sums over the replicas are means.
    if (auto seed = func->getAttrOfType<IntegerAttr>(kSeedReplicasAttr)) {
      if (seed.getInt() != replicas) {
        func.emitError("weft-data-parallel: weft-autodiff seeded the "
                       "backward for ")
            << seed.getInt() << " replicas, but the mesh's data axis has "
            << replicas;
        return signalPassFailure();
      }
      data.seeded = true;
      func->removeAttr(kSeedReplicasAttr);
    }
    // ZeRO's groups, when smaller than the data axis.
    auto groups =
        getDeviceMesh(func->getParentOfType<ModuleOp>(), kZeroMeshSymbol);
    if (failed(groups))
      return signalPassFailure();
    if (*groups) {
      data.grid = kZeroMeshSymbol;
      data.shardAxis = (*groups)->axisIndex(kDataShardAxis);
      data.pieces = (*groups)->sizeOf(kDataShardAxis);
      data.replicaAxis = (*groups)->axisIndex(kDataReplicaAxis);
    }
    if (bucketCapMb < 0) {
      func.emitError("weft-data-parallel: bucket-cap-mb must be >= 0");
      return signalPassFailure();
    }
    if (zeroStage < 0 || zeroStage > 3) {
      func.emitError("weft-data-parallel: zero-stage ")
          << int64_t(zeroStage) << " is not one of 0 (replicated), 1 "
          << "(optimizer state sharded), 2 (and gradients), 3 (and "
          << "parameters)";
      return signalPassFailure();
    }
    if (shardThresholdKb < 0) {
      func.emitError("weft-data-parallel: shard-threshold-kb must be >= 0");
      return signalPassFailure();
    }
    SmallVector<Operation *> updates;
    func.walk([&](Operation *op) {
      if (isOptimizerStep(op))
        updates.push_back(op);
    });
    if (updates.empty()) {
      func.emitError("weft-data-parallel: the step updates no parameter; "
                     "data parallelism needs a training step");
      return signalPassFailure();
    }
    if (zeroPrefetch && (zeroStage < 1 || zeroStage > 2)) {
      func.emitError("weft-data-parallel: zero-prefetch needs zero-stage 1 "
                     "or 2 (stage 3 gathers each parameter at its uses)");
      return signalPassFailure();
    }
    for (Operation *update : updates)
      memberOfUpdate[update] = memberOf(update);
    // Prefetched gathers are posted before each stage's first op reading
    // a parameter: where the stage's forward starts.
    prefetch = Prefetch();
    prefetch.enabled = zeroPrefetch;
    for (Operation &op : func.getBody().front())
      if (llvm::any_of(op.getOperands(), [&](Value v) {
            auto arg = dyn_cast<BlockArgument>(v);
            return arg && func.getArgAttr(arg.getArgNumber(), kParamAttr);
          }))
        prefetch.at.try_emplace(stageOf(&op).value_or(0), &op);
    llvm::SetVector<Operation *> chain = hoistAccumulation(updates);
    reduceInBuckets(func, readyOrder(func, updates));
    // ZeRO stages 2 and 3 sum the micro-batches' shards instead.
    // (A chain op precedes its operands' in `chain`.)
    for (Operation *op : chain) {
      if (!op->use_empty())
        continue;
      SmallVector<Value> operands(op->getOperands());
      op->erase();
      for (Value v : operands)
        if (auto constant = v.getDefiningOp<ConstantOp>();
            constant && constant->use_empty())
          constant->erase();
    }
    averageLoss(func);
  }

  /// `update` with its gradient's parts when weft-accumulate-microbatches
  /// summed it, (g_0 + ... + g_{M-1}) * (1/M), or g_0 + ... + g_{M-1}
  /// when the backward was seeded with 1/M: g_0 .. g_{M-1}, each of its
  /// own micro-batch, in order; no parts for any other gradient.
  static BucketMember memberOf(Operation *update) {
    BucketMember member{update};
    Value sum = update->getOperand(kGradOperand);
    // The accumulation's 1/M: its constant is 1/M by construction.
    auto scale = sum.getDefiningOp<MulOp>();
    if (scale) {
      if (microBatchOf(scale) ||
          !scale->getOperand(1).getDefiningOp<ConstantOp>())
        return member;
      sum = scale->getOperand(0);
    }
    SmallVector<Value> parts;
    while (auto add = sum.getDefiningOp<AddOp>()) {
      if (microBatchOf(add))
        break;
      parts.push_back(add->getOperand(1));
      sum = add->getOperand(0);
    }
    parts.push_back(sum);
    std::reverse(parts.begin(), parts.end());
    for (auto [k, part] : llvm::enumerate(parts)) {
      Operation *def = part.getDefiningOp();
      if (!def || microBatchOf(def) != int64_t(k))
        return member;
    }
    if (parts.size() > 1) {
      member.microBatchGrads = std::move(parts);
      member.scaledAfterSum = bool(scale);
    }
    return member;
  }

  /// The updates in the order their gradients become ready: the reverse
  /// of the order the forward first uses their parameters, and among one
  /// op's operands the reverse of theirs (a Linear's gemm reads W, then its
  /// bias: DDP's reversed registration order has the bias first).
  static SmallVector<Operation *> readyOrder(func::FuncOp func,
                                             ArrayRef<Operation *> updates) {
    using Use = std::pair<int64_t, unsigned>; // (op position, operand)
    llvm::DenseMap<Value, Use> firstUse;
    int64_t position = 0;
    for (Operation &op : func.getBody().front()) {
      ++position;
      if (!isForward(&op))
        continue;
      for (OpOperand &o : op.getOpOperands())
        if (isa<BlockArgument>(o.get()))
          firstUse.try_emplace(o.get(), Use{position, o.getOperandNumber()});
    }
    SmallVector<std::pair<Use, Operation *>> keyed;
    for (Operation *update : updates)
      keyed.push_back({firstUse.lookup(update->getOperand(0)), update});
    llvm::stable_sort(keyed, [](const auto &a, const auto &b) {
      return a.first > b.first;
    });
    SmallVector<Operation *> order;
    for (auto &[use, update] : keyed)
      order.push_back(update);
    return order;
  }

  void reduceInBuckets(func::FuncOp func, ArrayRef<Operation *> updates) {
    // Buckets never mix stages or dtypes (DDP: devices or dtypes), nor,
    // from ZeRO-2 on, gradients summed from micro-batch parts with others
    // (a tied parameter's, summed per use): a bucket reduce-scatters each
    // micro-batch only when all its members have the parts.
    llvm::DenseMap<std::tuple<int64_t, Type, int>, int64_t> keys;
    SmallVector<BucketTensor> tensors;
    for (Operation *update : updates) {
      auto type =
          cast<RankedTensorType>(update->getOperand(kGradOperand).getType());
      bool parts = zeroStage >= 2 &&
                   memberOfUpdate.lookup(update).microBatchGrads.size() > 1;
      auto key = std::make_tuple(stageOf(update).value_or(0),
                                 type.getElementType(), int(parts));
      int64_t id = keys.try_emplace(key, keys.size()).first->second;
      tensors.push_back({type.getNumElements() *
                             ((type.getElementTypeBitWidth() + 7) / 8),
                         id});
    }
    auto cap = int64_t(bucketCapMb * 1024 * 1024);
    for (const std::vector<size_t> &bucket :
         assignGradientBuckets(tensors, cap)) {
      SmallVector<Operation *> members;
      for (size_t i : bucket)
        members.push_back(updates[i]);
      reduceBucket(func, members);
    }
  }

  /// One bucket: all-reduced, or with ZeRO its parameters of at least the
  /// threshold reduce-scattered and updated in shards (ShardedBucket.h).
  void reduceBucket(func::FuncOp func, ArrayRef<Operation *> members) {
    int64_t bucket = buckets++;
    // With ZeRO, parameters of at least the threshold are sharded.
    SmallVector<Operation *> replicated;
    SmallVector<BucketMember> sharded;
    for (Operation *update : members) {
      if (zeroStage >= 1 &&
          byteSize(update->getOperand(0).getType()) >= shardThresholdKb * 1024)
        sharded.push_back(memberOfUpdate.lookup(update));
      else
        replicated.push_back(update);
    }
    if (!sharded.empty()) {
      SmallVector<Value> grads;
      for (const BucketMember &m : sharded)
        grads.push_back(m.update->getOperand(kGradOperand));
      shardBucket(func, sharded, latestDef(grads), bucket, zeroStage, data,
                  prefetch);
    }
    if (!replicated.empty())
      allReduceBucket(replicated, bucket);
  }

  /// `members`' gradients flattened into one buffer, all-reduced over the
  /// data axis (posted right after the last gradient), scaled by 1/D
  /// (unless seeded) and split back before the first update that reads
  /// one of them.
  void allReduceBucket(ArrayRef<Operation *> members, int64_t bucket) {
    SmallVector<Value> grads;
    for (Operation *update : members)
      grads.push_back(update->getOperand(kGradOperand));
    Operation *ready = latestDef(grads);
    Location loc = members.front()->getLoc();
    OpBuilder b(members.front()->getContext());
    if (ready)
      b.setInsertionPointAfter(ready);
    else
      b.setInsertionPoint(members.front());
    // New ops join the task and stage of the op they follow (the operands
    // are local: weft-insert-send-recv ran).
    Operation *placement = ready ? ready : members.front();
    auto place = [&](Operation *op) {
      joinTask(op, placement);
      return op;
    };
    Value flat;
    SmallVector<int64_t> sizes;
    if (grads.size() == 1) {
      flat = grads[0];
    } else {
      SmallVector<Value> pieces;
      for (Value g : grads) {
        int64_t n = cast<RankedTensorType>(g.getType()).getNumElements();
        sizes.push_back(n);
        pieces.push_back(
            place(ReshapeOp::create(b, loc, g, {n}))->getResult(0));
      }
      flat = place(ConcatOp::create(b, loc, pieces, 0))->getResult(0);
    }
    auto sum = shard::AllReduceOp::create(
        b, loc, flat, kMeshSymbol,
        ArrayRef<shard::GridAxis>{shard::GridAxis(axis)},
        shard::ReductionKind::Sum);
    place(sum);
    sum->setAttr(kBucketAttr, b.getI64IntegerAttr(bucket));

    // The scale and the split run with the updates, after the wait.
    Operation *first = firstUpdateAfter(members, sum);
    b.setInsertionPoint(first);
    placement = first;
    // The mean (the sum already, of gradients seeded with 1/D).
    Value mean = sum.getResult();
    if (!data.seeded)
      mean = place(MulOp::create(
                       b, loc, mean,
                       scalarConstant(b, loc, flat.getType(), 1.0 / replicas)))
                 ->getResult(0);
    SmallVector<Value> reduced;
    if (grads.size() == 1) {
      reduced.push_back(mean);
    } else {
      auto split = place(SplitOp::create(b, loc, mean, 0, sizes));
      for (auto [piece, g] : llvm::zip(split->getResults(), grads)) {
        auto shape = cast<RankedTensorType>(g.getType()).getShape();
        reduced.push_back(place(ReshapeOp::create(b, loc, piece, shape))
                              ->getResult(0));
      }
    }
    for (auto [update, g] : llvm::zip(members, reduced))
      update->setOperand(kGradOperand, g);
  }

  /// The loss a replica computes is the mean over its part of the batch:
  /// the step's loss is the mean over the replicas (what one device
  /// training on the whole batch reports).
  void averageLoss(func::FuncOp func) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    for (OpOperand &result : ret->getOpOperands()) {
      if (func.getResultAttr(result.getOperandNumber(), kUpdateAttr))
        continue;
      Value loss = result.get();
      auto type = cast<RankedTensorType>(loss.getType());
      if (type.getRank() != 0 || !isa<FloatType>(type.getElementType()))
        continue;
      Operation *def = loss.getDefiningOp();
      OpBuilder b(func.getContext());
      if (def)
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPoint(ret);
      Location loc = loss.getLoc();
      auto sum = shard::AllReduceOp::create(
          b, loc, loss, kMeshSymbol,
          ArrayRef<shard::GridAxis>{shard::GridAxis(axis)},
          shard::ReductionKind::Sum);
      Value scale = scalarConstant(b, loc, type, 1.0 / replicas);
      auto mean = MulOp::create(b, loc, sum.getResult(), scale);
      if (def) {
        joinTask(sum, def);
        joinTask(mean, def);
      }
      result.set(mean);
    }
  }

  int64_t replicas = 1, axis = 0, buckets = 0;
  llvm::DenseMap<Operation *, BucketMember> memberOfUpdate;
  Prefetch prefetch; // with zero-prefetch: where the next gather goes
  DataAxis data;      // where ZeRO's pieces live
};

} // namespace
