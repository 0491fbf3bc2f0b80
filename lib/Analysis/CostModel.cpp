//===- CostModel.cpp - predicted seconds of ops and transfers -------------===//

#include "weft/Analysis/CostModel.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace weft;

double weft::DeviceModel::flopsFor(Type elementType) const {
  if (elementType && (elementType.isBF16() || elementType.isF16()))
    return flops16PerSecond;
  if (elementType && elementType.isF64())
    return flops64PerSecond;
  return flopsPerSecond;
}

double weft::DeviceModel::gemmFlopsPerSecond(double m, double n, double k,
                                             double peak) const {
  if (gemmRates.empty())
    return peak;
  double weights = 0, sum = 0;
  for (const GemmRate &r : gemmRates) {
    double dm = std::log2(m / r.m), dn = std::log2(n / r.n),
           dk = std::log2(k / r.k);
    double d2 = dm * dm + dn * dn + dk * dk;
    if (d2 < 1e-12)
      return peak * r.fractionOfPeak;
    double w = 1 / (d2 * d2);
    weights += w;
    sum += w * r.fractionOfPeak;
  }
  return peak * sum / weights;
}

std::optional<weft::GemmShape> weft::gemmShapeOf(Operation *op) {
  auto dims = [](Value v) { return cast<ShapedType>(v.getType()).getShape(); };
  auto gemm = [&](Value a, bool transA, Value result) -> GemmShape {
    ArrayRef<int64_t> r = dims(result);
    return {1, r[0], r[1], dims(a)[transA ? 0 : 1]};
  };
  if (auto matmul = dyn_cast<MatMulOp>(op)) {
    ArrayRef<int64_t> r = dims(matmul.getResult()), a = dims(matmul.getLhs());
    if (r.size() < 2 || a.size() < 2)
      return std::nullopt;
    int64_t batch = 1;
    for (int64_t d : r.drop_back(2))
      batch *= d;
    int64_t k = matmul.getTransA() ? a[a.size() - 2] : a.back();
    return GemmShape{batch, r[r.size() - 2], r.back(), k};
  }
  if (auto op2 = dyn_cast<GemmOp>(op))
    return gemm(op2.getA(), op2.getTransA(), op2.getResult());
  if (auto op2 = dyn_cast<GemmGeluTanhOp>(op))
    return gemm(op2.getA(), op2.getTransA(), op2.getOutput());
  if (auto op2 = dyn_cast<GemmGeluTanhGradOp>(op))
    return gemm(op2.getA(), op2.getTransA(), op2.getResult());
  if (auto wgrad = dyn_cast<WgradBiasOp>(op)) {
    ArrayRef<int64_t> x = dims(wgrad.getInput()), g = dims(wgrad.getGrad());
    return GemmShape{1, x[1], g[1], x[0]};
  }
  return std::nullopt;
}

Roofline weft::opRoofline(Operation *op, const DeviceModel &device) {
  auto cost = dyn_cast<CostOpInterface>(op);
  if (!cost || collectiveKind(op) || isView(op) || isa<ConstantOp>(op))
    return {};
  Type element = op->getNumResults() == 0
                     ? Type()
                     : getElementTypeOrSelf(op->getResult(0).getType());
  double peak = device.flopsFor(element);
  Roofline roofline;
  roofline.computeSeconds = cost.getFlops() / peak;
  // A GEMM at its shape's achieved rate, where the device model has them.
  if (std::optional<GemmShape> g = gemmShapeOf(op);
      g && !device.gemmRates.empty() && g->m > 0 && g->n > 0 && g->k > 0)
    roofline.computeSeconds =
        cost.getFlops() / device.gemmFlopsPerSecond(double(g->m), double(g->n),
                                                    double(g->k), peak);
  roofline.memorySeconds = (cost.getBytesRead() + cost.getBytesWritten()) /
                           device.memoryBytesPerSecond;
  return roofline;
}

double weft::opSeconds(Operation *op, const DeviceModel &device) {
  if (std::optional<CollectiveKind> kind = collectiveKind(op))
    return collectiveSeconds(*kind, collectiveBytes(op), collectiveRanks(op),
                             device, collectiveRanksPerNode(op, device));
  return opRoofline(op, device).seconds();
}

double weft::transferSeconds(int64_t bytes, const DeviceModel &device,
                             bool crossesNodes) {
  return crossesNodes
             ? device.nodeLatencySeconds + bytes / device.nodeBytesPerSecond
             : device.linkLatencySeconds + bytes / device.linkBytesPerSecond;
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
                               int64_t ranks, const DeviceModel &device,
                               int64_t perNode) {
  if (ranks <= 1)
    return 0.0;
  perNode = std::clamp<int64_t>(perNode, 1, ranks);
  auto ring = [&](int64_t n, double wholeBytes, bool network) {
    double latency =
        network ? device.nodeLatencySeconds : device.linkLatencySeconds;
    double bandwidth =
        network ? device.nodeBytesPerSecond : device.linkBytesPerSecond;
    return ringSteps(kind, n) * (latency + wholeBytes / n / bandwidth);
  };
  int64_t nodes = ranks / perNode;
  if (nodes == 1)
    return ring(ranks, double(bytes), /*network=*/false);
  if (perNode == 1)
    return ring(ranks, double(bytes), /*network=*/true);
  // Hierarchical: the node's members reduce-scatter (all-gather) the whole
  // tensor over the node's links, and each runs the collective across the
  // nodes on its 1/perNode part, the node's members' rings side by side,
  // each at its share of the node's NICs.
  return ring(perNode, double(bytes), /*network=*/false) +
         ring(nodes, double(bytes) / perNode, /*network=*/true);
}

int64_t weft::collectiveBytes(Operation *op) {
  // The whole tensor: an all-gather's result, the others' operand.
  Value whole = isa<shard::AllGatherOp>(op) ? op->getResult(0)
                                             : op->getOperand(0);
  return byteSize(whole.getType());
}

namespace {
/// A collective's grid shape and the axes it runs over; empty without them.
std::pair<ArrayRef<int64_t>, ArrayRef<int16_t>> gridAxes(Operation *op) {
  auto grid = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
      op, op->getAttrOfType<FlatSymbolRefAttr>("grid"));
  auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
  if (!grid || !axes)
    return {};
  return {grid.getShape(), axes.asArrayRef()};
}
} // namespace

int64_t weft::collectiveRanks(Operation *op) {
  auto [shape, axes] = gridAxes(op);
  int64_t ranks = 1;
  for (int16_t axis : axes)
    ranks *= shape[axis];
  return ranks;
}

int64_t weft::groupRanksPerNode(ArrayRef<int64_t> shape, ArrayRef<int16_t> axes,
                                int64_t devicesPerNode) {
  // Row-major strides; a group inside one node needs no counting.
  auto stride = [&](int16_t axis) {
    int64_t s = 1;
    for (int64_t inner : shape.drop_front(axis + 1))
      s *= inner;
    return s;
  };
  int64_t span = 1, ranks = 1;
  for (int16_t axis : axes) {
    span += (shape[axis] - 1) * stride(axis);
    ranks *= shape[axis];
  }
  if (span <= devicesPerNode)
    return ranks;
  // The members' offsets from the first, in rank order.
  std::vector<int64_t> offsets = {0};
  for (int16_t axis : axes) {
    std::vector<int64_t> next;
    for (int64_t offset : offsets)
      for (int64_t i = 0; i < shape[axis]; ++i)
        next.push_back(offset + i * stride(axis));
    offsets = std::move(next);
  }
  return llvm::count_if(
      offsets, [&](int64_t offset) { return offset < devicesPerNode; });
}

int64_t weft::collectiveRanksPerNode(Operation *op, const DeviceModel &device) {
  auto [shape, axes] = gridAxes(op);
  return groupRanksPerNode(shape, axes, device.devicesPerNode);
}
