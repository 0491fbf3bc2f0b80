//===- DeviceModelFile.h - device models read from JSON files ---*- C++ -*-===//
//
// A device model as data (bench/devices/NAME.json): every number an object
// {"value": V, "source": "..."} naming where it comes from (a datasheet, a
// paper, NCCL's tuning model, a measurement). The fields, all required:
//
//   peak_flops_bf16, peak_flops_f16, peak_flops_tf32, peak_flops_f32,
//   peak_flops_f64      dense FLOP/s per device
//   memory_bandwidth    bytes/s per device
//   memory_capacity     bytes per device
//   devices_per_node
//   intra_node_bandwidth  bytes/s per device, one direction (NVLink)
//   intra_node_latency    seconds per message (a ring step)
//   nics_per_node, nic_bandwidth (bytes/s per NIC, one direction)
//   inter_node_latency    seconds per message (a ring step)
//
// A node's NICs are shared by its devices: a device's bandwidth across
// nodes is nics_per_node * nic_bandwidth / devices_per_node.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_DEVICEMODELFILE_H
#define WEFT_ANALYSIS_DEVICEMODELFILE_H

#include "weft/Analysis/CostModel.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace weft {

/// The device models shipped in bench/devices, by name, sorted.
std::vector<std::string> knownDeviceModels();

/// The device model `nameOrFile`: a known name, or a path to a JSON file
/// (one with a '/' or ending in .json). Errors, one line each: an unknown
/// name (naming the known ones), a file that cannot be read or is not
/// JSON, a missing field or one that is not {"value": number > 0,
/// "source": non-empty string} (naming the field and the file).
llvm::Expected<DeviceModel> loadDeviceModel(llvm::StringRef nameOrFile);

/// A pass's device-model option: the CPU default when empty, else
/// loadDeviceModel's, its error emitted at `at` (failure).
mlir::FailureOr<DeviceModel> deviceModelOption(llvm::StringRef option,
                                               mlir::Operation *at);

/// The same from JSON text; `origin` names it in errors.
llvm::Expected<DeviceModel> parseDeviceModel(llvm::StringRef json,
                                             llvm::StringRef origin);

} // namespace weft

#endif // WEFT_ANALYSIS_DEVICEMODELFILE_H
