//===- ShardInterfaces.cpp - weft's interfaces on upstream shard ops ------===//
//
// The collectives of a tensor-parallel program are `shard` dialect ops. weft
// attaches its two interfaces to them: a cost (no FLOPs; the bytes of the
// tensors, which the simulator turns into time) and a gradient under the
// convention stated in WeftParallelOps.td (replicated values carry complete
// gradients on every rank), under which an all-reduce's adjoint is the
// identity, an all-gather's a slice, a slice's an all-gather and a
// reduce-scatter's (a slice of an all-reduce) an all-gather. Source:
// Korthikanti et al. 2022, Section 3 (g and ḡ) and Section 4.2.2 (sequence
// parallelism's g and ḡ: all-gather and reduce-scatter, conjugate).
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "GradientUtils.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace weft;

namespace {

/// No FLOPs counted for communication (the reduction's adds are not model
/// FLOPs); bytes: the interface's default, each operand read and each
/// result written once.
template <typename Op>
struct CollectiveCost
    : CostOpInterface::ExternalModel<CollectiveCost<Op>, Op> {
  int64_t getFlops(Operation *) const { return 0; }
};

/// Megatron's g: the forward sums the ranks' partial results into a
/// replicated value whose (complete, replicated) gradient is each partial
/// input's gradient.
struct AllReduceGradient
    : GradientOpInterface::ExternalModel<AllReduceGradient,
                                         shard::AllReduceOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &, ArrayRef<Value> dys,
                               SmallVectorImpl<Value> &dxs) const {
    dxs.assign(op->getNumOperands(), Value());
    dxs[0] = dys[0];
    return success();
  }
};

/// Each rank's part of the gathered value's (complete) gradient. When that
/// gradient is f's all-reduce of partial gradients (the all-gather before a
/// column-parallel linear under sequence parallelism), the all-reduce and
/// the slice are one reduce-scatter: Megatron's ḡ. The all-reduce, then
/// unused, is swept with the other dead backward ops.
struct AllGatherGradient
    : GradientOpInterface::ExternalModel<AllGatherGradient,
                                         shard::AllGatherOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> dys,
                               SmallVectorImpl<Value> &dxs) const {
    auto gather = cast<shard::AllGatherOp>(op);
    dxs.assign(1, Value());
    if (!dys[0])
      return success();
    Type type = gather.getInput().getType();
    auto sum = dys[0].getDefiningOp<shard::AllReduceOp>();
    if (sum && dys[0].use_empty() &&
        sum.getReduction() == shard::ReductionKind::Sum &&
        sum.getGrid() == gather.getGrid() &&
        sum.getGridAxes() == gather.getGridAxes()) {
      dxs[0] = shard::ReduceScatterOp::create(
          b, gather.getLoc(), type, gather.getGridAttr(),
          gather.getGridAxesAttr(), sum.getInput(), sum.getReductionAttr(),
          gather.getGatherAxisAttr());
      return success();
    }
    dxs[0] = shard::AllSliceOp::create(b, gather.getLoc(), type,
                                       gather.getGridAttr(),
                                       gather.getGridAxesAttr(), dys[0],
                                       gather.getGatherAxisAttr());
    return success();
  }
};

/// The whole (complete) gradient from every rank's part of it.
struct AllSliceGradient
    : GradientOpInterface::ExternalModel<AllSliceGradient,
                                         shard::AllSliceOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> dys,
                               SmallVectorImpl<Value> &dxs) const {
    auto slice = cast<shard::AllSliceOp>(op);
    dxs.assign(1, Value());
    if (dys[0])
      dxs[0] = shard::AllGatherOp::create(
          b, slice.getLoc(), slice.getInput().getType(), slice.getGridAttr(),
          slice.getGridAxesAttr(), dys[0], slice.getSliceAxisAttr());
    return success();
  }
};

/// A reduce-scatter is a slice of an all-reduce: the adjoint of the slice
/// (an all-gather) and of the all-reduce (the identity).
struct ReduceScatterGradient
    : GradientOpInterface::ExternalModel<ReduceScatterGradient,
                                         shard::ReduceScatterOp> {
  LogicalResult buildGradients(Operation *op, OpBuilder &b,
                               ArrayRef<Value> dys,
                               SmallVectorImpl<Value> &dxs) const {
    auto scatter = cast<shard::ReduceScatterOp>(op);
    dxs.assign(1, Value());
    if (dys[0])
      dxs[0] = shard::AllGatherOp::create(
          b, scatter.getLoc(), scatter.getInput().getType(),
          scatter.getGridAttr(), scatter.getGridAxesAttr(), dys[0],
          scatter.getScatterAxisAttr());
    return success();
  }
};

} // namespace

LogicalResult CopyToTensorParallelOp::buildGradients(
    OpBuilder &b, ArrayRef<Value> dys, SmallVectorImpl<Value> &dxs) {
  if (!grad::prepare(*this, dys, dxs))
    return success();
  SmallVector<shard::GridAxis> axes(getGridAxes());
  dxs[0] = shard::AllReduceOp::create(b, getLoc(), dys[0], getGrid(), axes,
                                      shard::ReductionKind::Sum);
  return success();
}

void weft::attachShardInterfaces(MLIRContext &ctx) {
  shard::AllReduceOp::attachInterface<CollectiveCost<shard::AllReduceOp>,
                                      AllReduceGradient>(ctx);
  shard::AllGatherOp::attachInterface<CollectiveCost<shard::AllGatherOp>,
                                      AllGatherGradient>(ctx);
  shard::AllSliceOp::attachInterface<CollectiveCost<shard::AllSliceOp>,
                                     AllSliceGradient>(ctx);
  shard::ReduceScatterOp::attachInterface<
      CollectiveCost<shard::ReduceScatterOp>, ReduceScatterGradient>(ctx);
}
