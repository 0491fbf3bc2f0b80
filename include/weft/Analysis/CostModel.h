//===- CostModel.h - predicted seconds of ops and transfers -----*- C++ -*-===//
//
// Turns CostOpInterface counts (FLOPs, bytes) into seconds on a device, for
// the pipeline partitioner and the schedule simulator. An op takes the
// roofline time max(FLOPs / flop rate, bytes / memory bandwidth) (Williams,
// Waterman & Patterson, "Roofline", CACM 2009), at the peak of its result's
// dtype; a point-to-point transfer takes latency + bytes / link bandwidth
// (the alpha-beta model of Hockney, 1994). The defaults describe one core of
// this project's CI machine (OpenBLAS SGEMM ~50 GFLOP/s sustained, ~8 GB/s
// streaming, MPI shared memory ~4 GB/s); weftc's --device-model reads
// another from a file (DeviceModelFile.h).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_COSTMODEL_H
#define WEFT_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <cstdint>

namespace weft {

struct DeviceModel {
  std::string name = "default";      ///< the file's name, or "default"
  double flopsPerSecond = 50e9;      ///< f32 FLOP/s (dense)
  double flops16PerSecond = 50e9;    ///< bf16/f16 FLOP/s (dense)
  double flops64PerSecond = 50e9;    ///< f64 FLOP/s (dense)
  double memoryBytesPerSecond = 8e9; ///< memory bandwidth, bytes/s
  int64_t memoryBytes = 0;           ///< memory per device, bytes (0: unset)
  double linkBytesPerSecond = 4e9;   ///< within a node, one direction, bytes/s
  double linkLatencySeconds = 10e-6; ///< within a node, per message, seconds
  int64_t devicesPerNode = 1;
  double nodeBytesPerSecond = 4e9;   ///< across nodes, per device, bytes/s
  double nodeLatencySeconds = 10e-6; ///< across nodes, per message, seconds

  /// Achieved GEMM rates at sampled (m, n, k), as fractions of the peak of
  /// the dtype they were measured in (weft-run --calibrate's sweep, or a
  /// fit); a GEMM of any dtype runs at that fraction of its own dtype's
  /// peak. Empty: GEMMs run at the peak.
  struct GemmRate {
    double m, n, k, fractionOfPeak;
  };
  std::vector<GemmRate> gemmRates;

  /// The peak FLOP/s of an op computing in `elementType` (f32 for a non-
  /// float type).
  double flopsFor(mlir::Type elementType) const;
  /// The FLOP/s of an m x k by k x n GEMM whose dtype peaks at `peak`:
  /// `peak` times gemmRates' fractions interpolated in log space (inverse-
  /// distance weights, power 4, over log2 m, n, k: exact at a sample,
  /// between the samples' fractions elsewhere), or `peak` without them.
  double gemmFlopsPerSecond(double m, double n, double k, double peak) const;
};

/// The two sides of an op's roofline (Williams, Waterman & Patterson,
/// CACM 2009), seconds: its FLOPs over the device's rate (a GEMM's at its
/// shape, with gemmRates) and its bytes read and written over the memory
/// bandwidth. The op takes the larger.
struct Roofline {
  double computeSeconds = 0, memorySeconds = 0;
  double seconds() const { return std::max(computeSeconds, memorySeconds); }
  bool memoryBound() const { return memorySeconds > computeSeconds; }
};
/// `op`'s roofline when it computes (implements CostOpInterface and is not
/// a view or constant); zero for anything else, collectives included.
Roofline opRoofline(mlir::Operation *op, const DeviceModel &device);

/// Predicted seconds of one execution of `op`: a collective's ring time
/// (collectiveSeconds), else its roofline time (0 for views, constants).
double opSeconds(mlir::Operation *op, const DeviceModel &device);

/// A GEMM-shaped op's `batch` products of m x k by k x n: matmul (its
/// leading dims the batch), gemm and the fused GELU GEMMs (their bias
/// aside), wgrad_bias (dW [k_in, n] = X^T [k_in, rows] dY [rows, n], its
/// column sums aside); nullopt for any other op.
struct GemmShape {
  int64_t batch, m, n, k;
  /// 2 batch m n k: the products' FLOPs.
  int64_t flops() const { return 2 * batch * m * n * k; }
};
std::optional<GemmShape> gemmShapeOf(mlir::Operation *op);

/// Predicted seconds to move `bytes` between two ranks: over the node's
/// link, or across nodes (nodeBytesPerSecond, nodeLatencySeconds) when
/// `crossesNodes`.
double transferSeconds(int64_t bytes, const DeviceModel &device,
                       bool crossesNodes = false);

/// Ring collectives over n ranks on a tensor of `bytes` bytes (the whole
/// tensor: an all-gather's result, a reduce-scatter's operand). An all-
/// gather and a reduce-scatter take n - 1 steps, each rank sending bytes / n
/// per step; an all-reduce is both, 2 (n - 1) steps (Patarasuk & Yuan,
/// "Bandwidth optimal all-reduce algorithms for clusters of workstations",
/// JPDC 2009; Korthikanti et al. 2022, Section 4.2.2: sequence
/// parallelism's all-gather + reduce-scatter cost what the all-reduce did).
enum class CollectiveKind { AllReduce, AllGather, ReduceScatter };

/// The collective `op` is (shard.all_reduce, all_gather, reduce_scatter).
std::optional<CollectiveKind> collectiveKind(mlir::Operation *op);

/// Bytes each of `ranks` ranks sends in a ring collective over a whole
/// tensor of `bytes`: (n - 1) / n of them, twice for an all-reduce.
int64_t collectiveBytesSent(CollectiveKind kind, int64_t bytes,
                            int64_t ranks);

/// Predicted seconds of that collective over `ranks` ranks, `perNode` of
/// them on each node (default: all on one):
/// - on one node, a ring over the node's links: its steps (n - 1 for an
///   all-gather or a reduce-scatter, 2(n - 1) for an all-reduce), each a
///   latency plus bytes / n over the link (Patarasuk & Yuan 2009);
/// - one member a node, the same ring over the network, at each device's
///   share of its node's NICs;
/// - several members a node, hierarchical (NCCL's two-level scheme): the
///   ring inside the node on the whole tensor, then the ring across the
///   nodes on each member's 1/perNode of it, the members' rings side by
///   side, each at its device's share of the NICs.
double collectiveSeconds(CollectiveKind kind, int64_t bytes, int64_t ranks,
                         const DeviceModel &device,
                         int64_t perNode = INT64_MAX);

/// How many of a collective's members share a node with its first. The
/// mesh numbers ranks row-major over its axes (the last, tensor, adjacent),
/// and launchers place devicesPerNode consecutive ranks on a node, so
/// these are the members at offsets below devicesPerNode from the first;
/// all of them when the group fits a node.
int64_t collectiveRanksPerNode(mlir::Operation *op, const DeviceModel &device);
/// The same for a group over `axes` of a mesh of `shape`.
int64_t groupRanksPerNode(llvm::ArrayRef<int64_t> shape,
                          llvm::ArrayRef<int16_t> axes, int64_t devicesPerNode);

/// The whole tensor's bytes of a collective op (see above), and the ranks
/// it runs over: the product of its grid axes' sizes (1 when the grid is
/// not found).
int64_t collectiveBytes(mlir::Operation *op);
int64_t collectiveRanks(mlir::Operation *op);

} // namespace weft

#endif // WEFT_ANALYSIS_COSTMODEL_H
