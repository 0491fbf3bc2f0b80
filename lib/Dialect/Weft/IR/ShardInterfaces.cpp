//===- ShardInterfaces.cpp - weft's interfaces on upstream shard ops ------===//
//
// The collectives of a tensor-parallel program are `shard` dialect ops. weft
// attaches its two interfaces to them: a cost (no FLOPs; the bytes of the
// tensors, which the simulator turns into time) and a gradient under the
// convention stated in WeftParallelOps.td (replicated values carry complete
// gradients on every rank), under which an all-reduce's adjoint is the
// identity. Source: Korthikanti et al. 2022, Section 3 (g and ḡ).
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
}
