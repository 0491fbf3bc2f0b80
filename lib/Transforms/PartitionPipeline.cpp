//===- PartitionPipeline.cpp - weft-partition-pipeline --------------------===//
//
// Assigns each forward op a pipeline stage; see Passes.td for the cost of an
// item and a cut, and weft/Analysis/Partition.h for the algorithm.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/DeviceModelFile.h"
#include "weft/Analysis/Partition.h"
#include "weft/Analysis/PartitionCosts.h"
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
    FailureOr<DeviceModel> loaded = deviceModelOption(deviceModel, func);
    if (failed(loaded))
      return failure();
    PartitionCosts costs = partitionCosts(func, *loaded);
    ArrayRef<Operation *> items = costs.items;
    ArrayRef<double> compute = costs.compute;
    MutableArrayRef<double> cut = costs.cut;
    llvm::DenseMap<Operation *, int64_t> itemOf;
    for (auto [i, op] : llvm::enumerate(items))
      itemOf[op] = i;
    int64_t n = items.size();
    if (stages < 1 || stages > n)
      return func.emitError("weft-partition-pipeline: stages=")
             << int64_t(stages) << " must be between 1 and the number of ops ("
             << n << ")";
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
