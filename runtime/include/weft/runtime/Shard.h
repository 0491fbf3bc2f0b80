//===- Shard.h - a rank's slice of a sharded parameter ----------*- C++ -*-===//
//
// Tensor parallelism keeps the model's ONNX initializers whole on disk; each
// rank reads its slice at load and writes it back at --save (ShardDesc in
// Plan.h: dimension `dim` of size n read as [blocks, count, n / (blocks
// count)], rank `index` holding [:, index, :]; Megatron-LM's
// column/row-parallel weights, and a fused QKV weight split per block).
// ZeRO's flat split (FlatShardDesc) then takes a data-parallel rank's
// piece of that slice.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_SHARD_H
#define WEFT_RUNTIME_SHARD_H

#include "weft/runtime/Plan.h"

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

} // namespace weft::rt

#endif // WEFT_RUNTIME_SHARD_H
