//===- Shard.h - a rank's slice of a sharded parameter ----------*- C++ -*-===//
//
// Tensor parallelism keeps the model's ONNX initializers whole on disk; each
// rank reads its slice at load and writes it back at --save (ShardDesc in
// Plan.h: dimension `dim` of size n read as [blocks, count, n / (blocks
// count)], rank `index` holding [:, index, :]; Megatron-LM's
// column/row-parallel weights, and a fused QKV weight split per block).
// ZeRO's flat split (FlatShardDesc) then takes a data-parallel rank's
// piece of that slice; PieceDesc names both.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_SHARD_H
#define WEFT_RUNTIME_SHARD_H

#include "weft/runtime/Plan.h"

#include <optional>
#include <string>
#include <vector>

namespace weft::rt {

/// The shape of the whole tensor whose shard `s` has shape `local`.
std::vector<int64_t> fullShape(const std::vector<int64_t> &local,
                               const ShardDesc &s);

/// The bytes of shard `s` of a tensor of shape `full` with elements of
/// `elementBytes` bytes stored row-major in `bytes`.
std::string sliceShard(const std::string &bytes,
                       const std::vector<int64_t> &full, int64_t elementBytes,
                       const ShardDesc &s);

/// Writes `shard` (sliceShard's layout) into its place in `bytes`.
void placeShard(std::string &bytes, const std::vector<int64_t> &full,
                int64_t elementBytes, const ShardDesc &s,
                const std::string &shard);

/// This rank's piece (FlatShardDesc) of the tensor `bytes`, with elements
/// of `elementBytes` bytes: s elements, zeros past the tensor's end.
std::string sliceFlatShard(const std::string &bytes, int64_t elementBytes,
                           const FlatShardDesc &s);

/// Writes `piece` (sliceFlatShard's layout, padding dropped) into its
/// place in `bytes`.
void placeFlatShard(std::string &bytes, int64_t elementBytes,
                    const FlatShardDesc &s, const std::string &piece);

/// Elements of a tensor of `shape` (non-negative dims), saturating at
/// INT64_MAX.
int64_t elementCount(const std::vector<int64_t> &shape);

/// Which piece of a tensor of shape `shape` (the model's whole tensor) a
/// buffer holds: its tensor-parallel slice `shard`, then the flat piece
/// `flatShard` of that slice; neither: the whole tensor. What loading,
/// --save and checkpoints convert between.
struct PieceDesc {
  std::vector<int64_t> shape;
  std::optional<ShardDesc> shard;
  std::optional<FlatShardDesc> flatShard;

  /// The shape of the piece's bytes: [s] for a flat piece, the slice's
  /// shape for a tensor-parallel slice, else `shape`.
  std::vector<int64_t> localShape() const;
};

/// The bytes of `piece` of the whole tensor `whole` (elements of
/// `elementBytes` bytes): its slice, then the flat piece of that.
std::string slicePiece(const std::string &whole, const PieceDesc &piece,
                       int64_t elementBytes);
/// Writes `bytes` (slicePiece's layout) into its place in `whole`.
void placePiece(std::string &whole, const PieceDesc &piece,
                int64_t elementBytes, const std::string &bytes);

} // namespace weft::rt

#endif // WEFT_RUNTIME_SHARD_H
