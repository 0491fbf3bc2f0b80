//===- CostModel.cpp - predicted seconds of ops and transfers -------------===//

#include "weft/Analysis/CostModel.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

#include <algorithm>

using namespace mlir;

double weft::opSeconds(Operation *op, const DeviceModel &device) {
  if (auto sum = dyn_cast<shard::AllReduceOp>(op))
    return allReduceSeconds(byteSize(sum.getResult().getType()),
                            collectiveRanks(op), device);
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost || isView(op) || isa<ConstantOp>(op))
    return 0.0;
  double compute = cost.getFlops() / device.flopsPerSecond;
  double memory = (cost.getBytesRead() + cost.getBytesWritten()) /
                  device.memoryBytesPerSecond;
  return std::max(compute, memory);
}

double weft::transferSeconds(int64_t bytes, const DeviceModel &device) {
  return device.linkLatencySeconds + bytes / device.linkBytesPerSecond;
}

int64_t weft::allReduceBytesSent(int64_t bytes, int64_t ranks) {
  return ranks <= 1 ? 0 : 2 * (ranks - 1) * bytes / ranks;
}

double weft::allReduceSeconds(int64_t bytes, int64_t ranks,
                              const DeviceModel &device) {
  if (ranks <= 1)
    return 0.0;
  return 2.0 * (ranks - 1) *
         (device.linkLatencySeconds +
          double(bytes) / ranks / device.linkBytesPerSecond);
}

int64_t weft::collectiveRanks(Operation *op) {
  auto sum = dyn_cast<shard::AllReduceOp>(op);
  if (!sum)
    return 1;
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      op, sum.getGridAttr());
  if (!grid)
    return 1;
  int64_t ranks = 1;
  for (shard::GridAxis axis : sum.getGridAxes())
    ranks *= grid.getShape()[axis];
  return ranks;
}
