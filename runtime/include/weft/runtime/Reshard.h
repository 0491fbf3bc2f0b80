//===- Reshard.h - whole tensors from a checkpoint's pieces -----*- C++ -*-===//
//
// A checkpoint shard holds each rank's pieces of its tensors: a
// tensor-parallel slice (ShardDesc), ZeRO's flat piece of that slice
// (FlatShardDesc), or the whole tensor. The manifest describes every piece
// (Shard.h's PieceDesc), as torch.distributed.checkpoint's metadata does, so that a
// run with another layout (pipeline, tensor or data-parallel degree, ZeRO
// stage) can resume: each rank assembles the whole tensors it needs from
// the pieces of every shard, then takes its own piece of each.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_RESHARD_H
#define WEFT_RUNTIME_RESHARD_H

#include "weft/runtime/Shard.h"
#include "weft/runtime/Tensor.h"

#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace weft::rt {

/// The manifest's form: {"shape": [...], "shard": {dim, blocks, index,
/// count}?, "flat_shard": {shape, index, count}?}.
nlohmann::json pieceJson(const PieceDesc &piece);
/// Parses and checks pieceJson's form (dims, indices below counts, counts
/// that divide, a flat piece of the slice's shape); throws Error starting
/// with `what` on anything else.
PieceDesc parsePiece(const nlohmann::json &j, const std::string &what);

/// Whole tensors assembled from pieces. A piece whose position (its
/// tensor-parallel index, its flat index) an earlier piece already filled
/// is skipped: replicas hold equal copies, except batch-norm statistics,
/// where the first (the lowest rank: data-parallel replica 0) wins, as in
/// --save.
class WholeTensors {
public:
  /// Adds `bytes`, the piece `piece` of tensor `name` of dtype `dtype`.
  /// Throws Error starting with `what` when the byte count is not the
  /// piece's, or the tensor's shape, dtype or split differ from its
  /// earlier pieces'.
  void add(const std::string &name, DType dtype, const PieceDesc &piece,
           const std::string &bytes, const std::string &what);

  struct Whole {
    DType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
    int64_t slices = 1, pieces = 1;               ///< the split's counts
    std::set<std::pair<int64_t, int64_t>> filled; ///< (slice, piece)
  };
  /// The tensor `name`, whole. Throws Error starting with `what` when no
  /// piece of it was added or some are missing.
  const Whole &get(const std::string &name, const std::string &what) const;

private:
  std::map<std::string, Whole> tensors;
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_RESHARD_H
