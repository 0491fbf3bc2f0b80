//===- PartitionCosts.cpp - what the pipeline partitioner weighs ----------===//

#include "weft/Analysis/PartitionCosts.h"

#include "weft/Analysis/Partition.h"
#include "weft/Analysis/RepeatedLayers.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/Transforms/FuncUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

weft::PartitionCosts weft::partitionCosts(func::FuncOp func,
                                          const DeviceModel &device) {
  PartitionCosts costs;
  llvm::DenseMap<Operation *, int64_t> itemOf;
  for (Operation &op : func.getBody().front().without_terminator())
    if (!isa<ConstantOp>(op)) {
      itemOf[&op] = costs.items.size();
      costs.items.push_back(&op);
    }
  int64_t n = costs.items.size();
  // Which values are differentiable (reach back to a parameter): their
  // ops have a backward pass, their cuts carry a gradient back.
  llvm::DenseSet<Value> active;
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), kParamAttr) && isFloatTensor(arg))
      active.insert(arg);
  costs.compute.assign(n, 0.0);
  for (auto [i, op] : llvm::enumerate(costs.items)) {
    bool differentiable = llvm::any_of(
        op->getOperands(), [&](Value v) { return active.contains(v); });
    if (differentiable)
      for (Value r : op->getResults())
        if (isFloatTensor(r))
          active.insert(r);
    costs.compute[i] = opSeconds(op, device) * (differentiable ? 3.0 : 1.0);
  }
  // A value produced by item d and last used by item u crosses the cuts
  // d .. u-1 (difference array over the cuts).
  llvm::SmallVector<double> delta(n + 1, 0.0);
  for (auto [d, op] : llvm::enumerate(costs.items))
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
  costs.cut.assign(n > 0 ? n - 1 : 0, 0.0);
  double running = 0;
  for (int64_t i = 0; i + 1 < n; ++i)
    costs.cut[i] = running += delta[i];
  return costs;
}

weft::PartitionCosts weft::segmentCosts(func::FuncOp func,
                                        const DeviceModel &device) {
  PartitionCosts ops = partitionCosts(func, device);
  PartitionCosts segments;
  int64_t next = 0; // index of the segment's first op in `ops.items`
  for (ArrayRef<Operation *> segment : residualSegments(ops.items)) {
    double seconds = 0;
    for (size_t k = 0; k < segment.size(); ++k)
      seconds += ops.compute[next + k];
    next += segment.size();
    segments.compute.push_back(seconds);
    if (next < static_cast<int64_t>(ops.items.size()))
      segments.cut.push_back(ops.cut[next - 1]);
  }
  return segments;
}

llvm::SmallVector<double> weft::stageShares(const PartitionCosts &costs,
                                            int64_t stages) {
  double total = 0;
  for (double seconds : costs.compute)
    total += seconds;
  if (stages < 1 || static_cast<int64_t>(costs.compute.size()) < stages ||
      total <= 0)
    return {};
  Partition partition = partitionBottleneck(costs.compute, costs.cut, stages);
  llvm::SmallVector<double> shares;
  for (int64_t s = 0; s < stages; ++s) {
    double seconds = 0;
    for (int64_t i = partition.starts[s]; i < partition.starts[s + 1]; ++i)
      seconds += costs.compute[i];
    shares.push_back(seconds / total);
  }
  return shares;
}
