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

} // namespace weft

#endif // WEFT_ANALYSIS_COSTMODEL_H
