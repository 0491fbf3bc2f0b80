//===- CostModel.h - predicted seconds of ops and transfers -----*- C++ -*-===//
//
// Turns CostOpInterface counts (FLOPs, bytes) into seconds on a device, for
// the pipeline partitioner and the schedule simulator. An op takes the
// roofline time max(FLOPs / flop rate, bytes / memory bandwidth) (Williams,
// Waterman & Patterson, "Roofline", CACM 2009); a point-to-point transfer
// takes latency + bytes / link bandwidth (the alpha-beta model of Hockney,
// 1994). The defaults describe one core of this project's CI machine
// (OpenBLAS SGEMM ~50 GFLOP/s sustained, ~8 GB/s streaming, MPI shared
// memory ~4 GB/s); weftc's --device-* flags override them.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_COSTMODEL_H
#define WEFT_ANALYSIS_COSTMODEL_H

#include "mlir/IR/Operation.h"

#include <cstdint>

namespace weft {

struct DeviceModel {
  double flopsPerSecond = 50e9;      ///< sustained FLOP/s
  double memoryBytesPerSecond = 8e9; ///< sustained memory bandwidth, bytes/s
  double linkBytesPerSecond = 4e9;   ///< point-to-point bandwidth, bytes/s
  double linkLatencySeconds = 10e-6; ///< per-message latency, seconds
};

/// Predicted seconds of one execution of `op`: its roofline time when it
/// implements CostOpInterface, 0 otherwise (views, constants).
double opSeconds(mlir::Operation *op, const DeviceModel &device);

/// Predicted seconds to move `bytes` between two ranks.
double transferSeconds(int64_t bytes, const DeviceModel &device);

/// Bytes each of `ranks` ranks sends in a ring all-reduce of `bytes`:
/// 2 (n - 1) / n of them (a reduce-scatter, then an all-gather; Patarasuk &
/// Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
/// workstations", JPDC 2009).
int64_t allReduceBytesSent(int64_t bytes, int64_t ranks);

/// Predicted seconds of a ring all-reduce of `bytes` over `ranks` ranks:
/// 2 (n - 1) steps, each a latency plus bytes / n over the link.
double allReduceSeconds(int64_t bytes, int64_t ranks,
                        const DeviceModel &device);

/// The ranks a collective (`shard.all_reduce`) runs over: the product of
/// its grid axes' sizes; 1 when the grid is not found.
int64_t collectiveRanks(mlir::Operation *op);

} // namespace weft

#endif // WEFT_ANALYSIS_COSTMODEL_H
