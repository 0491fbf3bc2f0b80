//===- Shard.cpp - a rank's slice of a sharded parameter ------------------===//

#include "weft/runtime/Shard.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace weft::rt {

std::vector<int64_t> fullShape(const std::vector<int64_t> &local,
                               const ShardDesc &s) {
  std::vector<int64_t> full(local);
  full[s.dim] *= s.count;
  return full;
}

namespace {
/// The full tensor as [outer, blocks, count, run] bytes, the shard as
/// [outer, blocks, run]: calls copy(shard offset, full offset, run bytes)
/// for each contiguous run.
template <typename Copy>
void forEachRun(const std::vector<int64_t> &full, int64_t elementBytes,
                const ShardDesc &s, Copy copy) {
  int64_t outer = 1, inner = elementBytes;
  for (int64_t i = 0; i < s.dim; ++i)
    outer *= full[i];
  for (size_t i = s.dim + 1; i < full.size(); ++i)
    inner *= full[i];
  int64_t run = full[s.dim] / (s.blocks * s.count) * inner;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < s.blocks; ++k)
      copy((o * s.blocks + k) * run,
           ((o * s.blocks + k) * s.count + s.index) * run, run);
}
} // namespace

std::string sliceShard(const std::string &bytes,
                       const std::vector<int64_t> &full, int64_t elementBytes,
                       const ShardDesc &s) {
  std::string shard(bytes.size() / s.count, '\0');
  forEachRun(full, elementBytes, s, [&](int64_t to, int64_t from, int64_t n) {
    std::memcpy(shard.data() + to, bytes.data() + from, n);
  });
  return shard;
}

void placeShard(std::string &bytes, const std::vector<int64_t> &full,
                int64_t elementBytes, const ShardDesc &s,
                const std::string &shard) {
  forEachRun(full, elementBytes, s, [&](int64_t from, int64_t to, int64_t n) {
    std::memcpy(bytes.data() + to, shard.data() + from, n);
  });
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

int64_t FlatShardDesc::elements() const { return elementCount(shape); }

int64_t FlatShardDesc::piece() const {
  int64_t n = elements();
  return n / count + (n % count != 0);
}

namespace {
/// The elements [begin, end) of the whole tensor this rank's piece holds
/// (end - begin < s for the padded last pieces).
std::pair<int64_t, int64_t> pieceRange(const FlatShardDesc &s) {
  int64_t begin = std::min(s.index * s.piece(), s.elements());
  return {begin, std::min(begin + s.piece(), s.elements())};
}
} // namespace

std::string sliceFlatShard(const std::string &bytes, int64_t elementBytes,
                           const FlatShardDesc &s) {
  std::string piece(s.piece() * elementBytes, '\0');
  auto [begin, end] = pieceRange(s);
  std::memcpy(piece.data(), bytes.data() + begin * elementBytes,
              (end - begin) * elementBytes);
  return piece;
}

void placeFlatShard(std::string &bytes, int64_t elementBytes,
                    const FlatShardDesc &s, const std::string &piece) {
  auto [begin, end] = pieceRange(s);
  std::memcpy(bytes.data() + begin * elementBytes, piece.data(),
              (end - begin) * elementBytes);
}

std::vector<int64_t> PieceDesc::localShape() const {
  if (flatShard)
    return {flatShard->piece()};
  std::vector<int64_t> local(shape);
  if (shard)
    local[shard->dim] /= shard->count;
  return local;
}

std::string slicePiece(const std::string &whole, const PieceDesc &piece,
                       int64_t elementBytes) {
  std::string bytes =
      piece.shard ? sliceShard(whole, piece.shape, elementBytes, *piece.shard)
                  : whole;
  if (piece.flatShard)
    bytes = sliceFlatShard(bytes, elementBytes, *piece.flatShard);
  return bytes;
}

void placePiece(std::string &whole, const PieceDesc &piece,
                int64_t elementBytes, const std::string &bytes) {
  if (!piece.shard && !piece.flatShard) {
    whole = bytes;
    return;
  }
  // A flat piece goes into its slice, the slice into the whole.
  std::string slice = bytes;
  if (piece.flatShard) {
    slice = piece.shard ? sliceShard(whole, piece.shape, elementBytes,
                                     *piece.shard)
                        : whole;
    placeFlatShard(slice, elementBytes, *piece.flatShard, bytes);
  }
  if (piece.shard)
    placeShard(whole, piece.shape, elementBytes, *piece.shard, slice);
  else
    whole = std::move(slice);
}

} // namespace weft::rt
