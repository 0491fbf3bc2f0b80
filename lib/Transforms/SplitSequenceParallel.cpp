//===- SplitSequenceParallel.cpp - weft-split-sequence-parallel -----------===//
//
// Megatron's sequence parallelism on a tensor-parallel forward graph
// (Korthikanti et al. 2022, Section 4.2.2): the region analyzeSequenceParallel
// finds runs on 1/T of the sequence. Its all-reduces (g) become reduce-
// scatters along the sequence; values leaving it are all-gathered (before
// f's copy: Megatron's g-bar, whose adjoint weft-autodiff fuses into a
// reduce-scatter); replicated operands read along the sequence are sliced
// (`shard.all_slice`, adjoint all-gather); replicated operands broadcast
// along it that depend on parameters get f, so their gradients sum over the
// ranks' positions; dropouts draw their part of the whole mask.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/SequenceParallel.h"
#include "weft/Analysis/TensorParallel.h"
#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_SPLITSEQUENCEPARALLEL
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct SplitSequenceParallelPass
    : weft::impl::SplitSequenceParallelBase<SplitSequenceParallelPass> {
  using SplitSequenceParallelBase::SplitSequenceParallelBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<std::optional<DeviceMesh>> mesh =
        getDeviceMesh(func->getParentOfType<ModuleOp>());
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh || (*mesh)->sizeOf("tensor") == 1) {
      func.emitError("sequence parallelism needs a tensor axis of more than "
                     "one rank (--tensor-parallel T)");
      return signalPassFailure();
    }
    parts = (*mesh)->sizeOf("tensor");
    axis = (*mesh)->axisIndex("tensor");
    FailureOr<SequenceParallelRegion> region =
        analyzeSequenceParallel(func, parts);
    if (failed(region))
      return signalPassFailure();
    rewrite(func, *region);
  }

  void rewrite(func::FuncOp func, const SequenceParallelRegion &region) {
    MLIRContext *ctx = func.getContext();
    OpBuilder b(ctx);
    auto grid = FlatSymbolRefAttr::get(ctx, kMeshSymbol);
    auto axes = b.getDenseI16ArrayAttr({int16_t(axis)});
    auto inRegion = [&](OpOperand &use) {
      return region.ops.contains(use.getOwner());
    };
    auto after = [&](Value v) {
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&func.getBody().front());
    };
    // A parameter's slice or f: before its first reader in the region.
    auto beforeRegionUse = [&](Value v) {
      if (!isa<BlockArgument>(v))
        return after(v);
      Operation *first = nullptr;
      for (Operation *user : v.getUsers())
        if (region.ops.contains(user) &&
            (!first || user->isBeforeInBlock(first)))
          first = user;
      b.setInsertionPoint(first);
    };

    // Values leaving the region: all-gathered back to their whole type.
    for (Value v : region.gathers) {
      after(v);
      auto whole = shard::AllGatherOp::create(
          b, v.getLoc(), v.getType(), grid, axes, v,
          b.getIndexAttr(region.sharded.lookup(v)));
      v.replaceUsesWithIf(whole, [&](OpOperand &use) {
        return use.getOwner() != whole && !inRegion(use);
      });
    }
    // The region's values: local types (and attributes restating them).
    for (auto [v, dim] : region.sharded)
      v.setType(local(v, dim));
    for (Operation *op : region.ops) {
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        reshape.setShape(reshape.getType().getShape());
      } else if (isa<DropoutOp>(op)) {
        // Its part of the whole mask (plan emission adds the rank's index).
        int64_t dim = region.sharded.lookup(op->getResult(0));
        op->setAttr(kShardAttr,
                    b.getDictionaryAttr(
                        {b.getNamedAttr("dim", b.getI64IntegerAttr(dim)),
                         b.getNamedAttr("blocks", b.getI64IntegerAttr(1))}));
      }
    }
    // Replicated operands read along the sequence: the rank's part.
    for (auto [v, dim] : region.slices) {
      beforeRegionUse(v);
      auto part = shard::AllSliceOp::create(b, v.getLoc(), local(v, dim), grid,
                                            axes, v, b.getIndexAttr(dim));
      v.replaceUsesWithIf(part, inRegion);
    }
    // Replicated operands broadcast along the sequence: f, whose adjoint
    // sums the ranks' partial gradients.
    for (Value v : region.broadcasts) {
      beforeRegionUse(v);
      auto f = CopyToTensorParallelOp::create(b, v.getLoc(), v, grid, axes);
      v.replaceUsesWithIf(f, inRegion);
    }
    // g: the partial sums reduce-scattered along the sequence (last: the
    // region's op set must not hold erased ops while uses are rewired).
    for (Operation *op : region.ops) {
      auto sum = dyn_cast<shard::AllReduceOp>(op);
      if (!sum)
        continue;
      b.setInsertionPoint(sum);
      auto scattered = shard::ReduceScatterOp::create(
          b, sum.getLoc(), sum.getType(), grid, axes, sum.getInput(),
          shard::ReductionKindAttr::get(ctx, shard::ReductionKind::Sum),
          b.getIndexAttr(region.sharded.lookup(sum.getResult())));
      sum.replaceAllUsesWith(scattered.getResult());
      sum.erase();
    }
  }

  RankedTensorType local(Value v, int64_t dim) const {
    auto type = cast<RankedTensorType>(v.getType());
    return RankedTensorType::get(
        localShape(type.getShape(), Sharding::split(dim), parts),
        type.getElementType());
  }

  int64_t parts = 1, axis = 0;
};

} // namespace
