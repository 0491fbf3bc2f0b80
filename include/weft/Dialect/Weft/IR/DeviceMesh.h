//===- DeviceMesh.h - weft's device mesh in the IR --------------*- C++ -*-===//
//
// The devices a step runs on are a mesh with named axes, `pipeline`, `data`
// and `tensor`, held in the IR as MLIR's upstream `shard.grid @mesh` (its
// shape the axis sizes) with the names in `weft.mesh_axes`:
//
//   shard.grid @mesh(shape = 2x1x1) {weft.mesh_axes = ["pipeline", "data",
//                                                      "tensor"]}
//
// Collectives name the axes they run over by index (`shard.all_reduce ...
// grid_axes = [2]`). A rank's coordinates are its row-major multi-index over
// the shape: the tensor axis varies fastest, then data, then pipeline,
// Megatron-LM's default rank order, so the ranks of one tensor-parallel group
// are adjacent (one node, the fastest links).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_DEVICEMESH_H
#define WEFT_DIALECT_WEFT_IR_DEVICEMESH_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace weft {

/// The mesh's symbol and the attribute holding its axis names.
inline constexpr llvm::StringLiteral kMeshSymbol = "mesh";
inline constexpr llvm::StringLiteral kMeshAxesAttr = "weft.mesh_axes";

/// ZeRO's sharding groups when they are smaller than the data axis
/// (MindSpore's optimizer-parallel `shard_size`, FSDP's hybrid sharding):
/// a second view of the same devices, `shard.grid @zero_mesh` of shape
/// pipeline x data_replica x data_shard x tensor, data_shard of size S. The
/// rank at data coordinate d is at data_replica d / S and data_shard d % S,
/// so both grids number the ranks alike. ZeRO's reduce-scatters and
/// all-gathers run over data_shard (the S ranks of consecutive data
/// coordinates), the all-reduce of their pieces over data_replica.
inline constexpr llvm::StringLiteral kZeroMeshSymbol = "zero_mesh";
inline constexpr llvm::StringLiteral kDataReplicaAxis = "data_replica";
inline constexpr llvm::StringLiteral kDataShardAxis = "data_shard";

/// Whether the `shard` collective or slice `op` runs on the zero mesh.
bool onZeroMesh(mlir::Operation *op);

struct DeviceMesh {
  llvm::SmallVector<std::string> axes; ///< names, outermost first
  llvm::SmallVector<int64_t> sizes;    ///< devices along each axis

  /// weft's mesh: axes pipeline, data, tensor of these sizes.
  static DeviceMesh standard(int64_t pipeline, int64_t data, int64_t tensor) {
    return {{"pipeline", "data", "tensor"}, {pipeline, data, tensor}};
  }
  /// The ZeRO groups' view (kZeroMeshSymbol): S divides data.
  static DeviceMesh zeroGroups(int64_t pipeline, int64_t data, int64_t shard,
                               int64_t tensor) {
    return {{"pipeline", kDataReplicaAxis.str(), kDataShardAxis.str(),
             "tensor"},
            {pipeline, data / shard, shard, tensor}};
  }

  /// Devices in the mesh (ranks).
  int64_t size() const;
  /// Size of the axis named `name`, 1 when the mesh lacks it.
  int64_t sizeOf(llvm::StringRef name) const;
  /// Position of the axis named `name` among the axes (its index in
  /// coordinates and in collectives' grid_axes), -1 when the mesh lacks it.
  int64_t axisIndex(llvm::StringRef name) const;
  /// The rank's coordinates: its row-major multi-index. Pre: 0 <= rank <
  /// size().
  llvm::SmallVector<int64_t> coords(int64_t rank) const;
  /// The rank at `coords` (row-major linear index).
  int64_t rank(llvm::ArrayRef<int64_t> coords) const;
};

/// The module's mesh `symbol`, or nullopt when it has none; emits an error
/// and returns failure when `shard.grid @<symbol>` is malformed (a dynamic
/// size, names missing or not one per axis).
llvm::FailureOr<std::optional<DeviceMesh>>
getDeviceMesh(mlir::ModuleOp module, llvm::StringRef symbol = kMeshSymbol);

/// Adds `shard.grid @<symbol>` for `mesh` at the start of the module.
mlir::shard::GridOp createDeviceMesh(mlir::ModuleOp module,
                                     const DeviceMesh &mesh,
                                     llvm::StringRef symbol = kMeshSymbol);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_DEVICEMESH_H
