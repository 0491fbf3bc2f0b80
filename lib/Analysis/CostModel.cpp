//===- CostModel.cpp - predicted seconds of ops and transfers -------------===//

#include "weft/Analysis/CostModel.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"

#include <algorithm>

using namespace mlir;

double weft::DeviceModel::flopsFor(Type elementType) const {
  if (elementType && (elementType.isBF16() || elementType.isF16()))
    return flops16PerSecond;
  if (elementType && elementType.isF64())
    return flops64PerSecond;
  return flopsPerSecond;
}

double weft::opSeconds(Operation *op, const DeviceModel &device) {
  if (std::optional<CollectiveKind> kind = collectiveKind(op))
    return collectiveSeconds(*kind, collectiveBytes(op), collectiveRanks(op),
                             device);
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost || isView(op) || isa<ConstantOp>(op))
    return 0.0;
  Type element = op->getNumResults() == 0
                     ? Type()
                     : getElementTypeOrSelf(op->getResult(0).getType());
  double compute = cost.getFlops() / device.flopsFor(element);
  double memory = (cost.getBytesRead() + cost.getBytesWritten()) /
                  device.memoryBytesPerSecond;
  return std::max(compute, memory);
}

double weft::transferSeconds(int64_t bytes, const DeviceModel &device) {
  return device.linkLatencySeconds + bytes / device.linkBytesPerSecond;
}

std::optional<weft::CollectiveKind> weft::collectiveKind(Operation *op) {
  if (isa<shard::AllReduceOp>(op))
    return CollectiveKind::AllReduce;
  if (isa<shard::AllGatherOp>(op))
    return CollectiveKind::AllGather;
  if (isa<shard::ReduceScatterOp>(op))
    return CollectiveKind::ReduceScatter;
  return std::nullopt;
}

/// Ring steps: n - 1 for each half of an all-reduce.
static int64_t ringSteps(weft::CollectiveKind kind, int64_t ranks) {
  return (kind == weft::CollectiveKind::AllReduce ? 2 : 1) * (ranks - 1);
}

int64_t weft::collectiveBytesSent(CollectiveKind kind, int64_t bytes,
                                  int64_t ranks) {
  return ranks <= 1 ? 0 : ringSteps(kind, ranks) * bytes / ranks;
}

double weft::collectiveSeconds(CollectiveKind kind, int64_t bytes,
                               int64_t ranks, const DeviceModel &device) {
  if (ranks <= 1)
    return 0.0;
  return ringSteps(kind, ranks) *
         (device.linkLatencySeconds +
          double(bytes) / ranks / device.linkBytesPerSecond);
}

int64_t weft::collectiveBytes(Operation *op) {
  // The whole tensor: an all-gather's result, the others' operand.
  Value whole = isa<shard::AllGatherOp>(op) ? op->getResult(0)
                                             : op->getOperand(0);
  return byteSize(whole.getType());
}

int64_t weft::collectiveRanks(Operation *op) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      op, op->getAttrOfType<FlatSymbolRefAttr>("grid"));
  auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  if (!grid || !axes)
    return 1;
  int64_t ranks = 1;
  for (int16_t axis : axes.asArrayRef())
    ranks *= grid.getShape()[axis];
  return ranks;
}
