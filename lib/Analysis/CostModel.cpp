//===- CostModel.cpp - predicted seconds of ops and transfers -------------===//

#include "weft/Analysis/CostModel.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include <algorithm>

using namespace mlir;

double weft::opSeconds(Operation *op, const DeviceModel &device) {
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
