//===- PartitionPipeline.cpp - weft-partition-pipeline --------------------===//
//
// Assigns each forward op a pipeline stage; see Passes.td for the cost of an
// item and a cut, and weft/Analysis/Partition.h for the algorithm.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Analysis/CostModel.h"
#include "weft/Analysis/DeviceModelFile.h"
#include "weft/Analysis/Partition.h"
#include "weft/Analysis/RepeatedLayers.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace weft {
#define GEN_PASS_DEF_PARTITIONPIPELINE
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct PartitionPipelinePass
    : weft::impl::PartitionPipelineBase<PartitionPipelinePass> {
  using PartitionPipelineBase::PartitionPipelineBase;

  void runOnOperation() override {
    if (failed(partition(getOperation())))
      signalPassFailure();
  }

  LogicalResult partition(func::FuncOp func) {
    Block &body = func.getBody().front();
    // Items: every op but constants, in program (topological) order.
    SmallVector<Operation *> items;
    llvm::DenseMap<Operation *, int64_t> itemOf;
    for (Operation &op : body.without_terminator())
      if (!isa<ConstantOp>(op)) {
        itemOf[&op] = items.size();
        items.push_back(&op);
      }
    int64_t n = items.size();
    if (stages < 1 || stages > n)
      return func.emitError("weft-partition-pipeline: stages=")
             << int64_t(stages) << " must be between 1 and the number of ops (" << n
             << ")";

    // Which values are differentiable (reach back to a parameter): their
    // ops have a backward pass, their cuts carry a gradient back.
    llvm::DenseSet<Value> active;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kParamAttr) && isFloatTensor(arg))
        active.insert(arg);
    FailureOr<DeviceModel> loaded = deviceModelOption(deviceModel, func);
    if (failed(loaded))
      return failure();
    const DeviceModel &device = *loaded;
    SmallVector<double> compute(n), cut(n > 0 ? n - 1 : 0, 0.0);
    for (auto [i, op] : llvm::enumerate(items)) {
      bool differentiable = llvm::any_of(
          op->getOperands(), [&](Value v) { return active.contains(v); });
      if (differentiable)
        for (Value r : op->getResults())
          if (isFloatTensor(r))
            active.insert(r);
      compute[i] = opSeconds(op, device) * (differentiable ? 3.0 : 1.0);
    }
    // A value produced by item d and last used by item u crosses the cuts
    // d .. u-1 (difference array over the cuts).
    SmallVector<double> delta(n + 1, 0.0);
    for (auto [d, op] : llvm::enumerate(items))
      for (Value r : op->getResults()) {
        int64_t last = d;
        for (Operation *user : r.getUsers())
          if (auto it = itemOf.find(user); it != itemOf.end())
            last = std::max(last, it->second);
        if (last == static_cast<int64_t>(d))
          continue;
        double seconds = transferSeconds(byteSize(r.getType()), device) *
                         (active.contains(r) ? 2.0 : 1.0);
        delta[d] += seconds;
        delta[last] -= seconds;
      }
    double running = 0;
    for (int64_t i = 0; i + 1 < n; ++i)
      cut[i] = running += delta[i];
    if (balance.empty())
      keepToSingleValueCuts(items, itemOf, cut);

    Partition result;
    if (!balance.empty()) {
      if (static_cast<int64_t>(balance.size()) != stages)
        return func.emitError("weft-partition-pipeline: balance has ")
               << balance.size() << " entries for stages=" << int64_t(stages);
      int64_t sum = 0;
      for (int64_t count : balance) {
        if (count < 1)
          return func.emitError("weft-partition-pipeline: balance entries "
                                "must be >= 1, got ")
                 << count;
        sum += count;
      }
      if (sum != n)
        return func.emitError("weft-partition-pipeline: balance sums to ")
               << sum << " ops, the function has " << n
               << " (constants excluded)";
      result = partitionFromBalance(compute, cut, balance);
    } else {
      result = partitionBottleneck(compute, cut, stages);
    }

    Builder b(func.getContext());
    for (int64_t s = 0; s < stages; ++s)
      for (int64_t i = result.starts[s]; i < result.starts[s + 1]; ++i) {
        TaskFields task = TaskFields::of(items[i]);
        task.stage = s;
        setTask(items[i], task);
      }
    func->setAttr(kPipelineStagesAttr, b.getI64IntegerAttr(stages));
    return placeStages(func);
  }

  /// In a model of at least `stages` repeated layers (countRepeatedLayers:
  /// a transformer's blocks), stages are cut only past ops after which a
  /// single activation is live (residualSegments: the residual stream
  /// between blocks and their halves), as Megatron-LM assigns whole layers;
  /// other models (a U-Net, whose skips cross stages) keep every cut. The
  /// bottleneck alone cut inside blocks to even out the embedding and the head:
  /// under sequence parallelism after an all-gather, sending the whole [s, h]
  /// tensor, t times the shard's bytes, and keeping it for the backward (GPT-3
  /// 530B's stage 23 held 42 GB of them).
  void keepToSingleValueCuts(ArrayRef<Operation *> items,
                             const llvm::DenseMap<Operation *, int64_t> &itemOf,
                             MutableArrayRef<double> cut) {
    SmallVector<ArrayRef<Operation *>> segments = residualSegments(items);
    // As many layers as stages implies as many segments.
    if (countRepeatedLayers(segments) < stages)
      return;
    llvm::DenseSet<int64_t> single;
    for (ArrayRef<Operation *> segment : ArrayRef(segments).drop_back())
      single.insert(itemOf.lookup(segment.back()));
    // Dearer than any partition of single-value cuts, yet finite: the
    // dynamic programme compares sums.
    constexpr double kElsewhere = 1e9;
    for (auto [i, seconds] : llvm::enumerate(cut))
      if (!single.contains(i))
        seconds += kElsewhere;
  }

  /// Several stages per rank (model chunks): which rank runs each.
  LogicalResult placeStages(func::FuncOp func) {
    int64_t p = ranks == 0 ? int64_t(stages) : int64_t(ranks);
    if (p == stages)
      return success();
    if (p < 1 || stages % p != 0)
      return func.emitError("weft-partition-pipeline: ranks=")
             << p << " must divide stages=" << int64_t(stages);
    SmallVector<int64_t> rankOf(stages);
    for (int64_t s = 0; s < stages; ++s)
      rankOf[s] = s % p;
    if (placement == "v") {
      if (stages != 2 * p)
        return func.emitError("weft-partition-pipeline: placement=v needs "
                              "2 stages per rank, not ")
               << int64_t(stages) / p;
      for (int64_t s = p; s < stages; ++s)
        rankOf[s] = 2 * p - 1 - s;
    } else if (placement != "loop") {
      return func.emitError("weft-partition-pipeline: placement '")
             << placement << "': expected loop or v";
    }
    func->setAttr(kStageRanksAttr,
                  DenseI64ArrayAttr::get(func.getContext(), rankOf));
    return success();
  }
};

} // namespace
