//===- Calibrate.h - weft-run --calibrate -----------------------*- C++ -*-===//
//
// Measures the rates a device model states (the compiler's
// include/weft/Analysis/DeviceModelFile.h format) on the machine weft-run
// runs on, through the backend's own kernels and the communicator's
// transfers: memory bandwidth (the add kernel over 64 MiB operands), a GEMM
// sweep from cold caches (the matmul kernel, f32, m, n, k in {64, 256,
// 1024}, and one f64 point; the add run before each run), and with 2 or
// more ranks a ping-pong between ranks 0 and 1 (8 B to 16 MiB) fitted to
// latency + bytes / bandwidth (least squares).
// Every number's "source" says how it was measured.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_TOOLS_CALIBRATE_H
#define WEFT_RUNTIME_TOOLS_CALIBRATE_H

#include "weft/runtime/Backend.h"
#include "weft/runtime/Communicator.h"

#include <nlohmann/json.hpp>

namespace weft::rt {

/// The device model of this machine (rank 0's measurements; every rank
/// takes part in the ping-pong). Throws Error when a kernel fails.
nlohmann::json calibrate(Backend &backend, Communicator &world,
                         const std::string &device);

} // namespace weft::rt

#endif // WEFT_RUNTIME_TOOLS_CALIBRATE_H
