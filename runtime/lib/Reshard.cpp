//===- Reshard.cpp - whole tensors from a checkpoint's pieces -------------===//

#include "weft/runtime/Reshard.h"

#include <climits>

namespace weft::rt {

using json = nlohmann::json;

json pieceJson(const PieceDesc &piece) {
  json j = {{"shape", piece.shape}};
  if (const auto &s = piece.shard)
    j["shard"] = {{"dim", s->dim},
                  {"blocks", s->blocks},
                  {"index", s->index},
                  {"count", s->count}};
  if (const auto &s = piece.flatShard)
    j["flat_shard"] = {
        {"shape", s->shape}, {"index", s->index}, {"count", s->count}};
  return j;
}

namespace {

/// The non-negative integer `j[key]`; throws Error naming it otherwise.
int64_t count(const json &j, const char *key, const std::string &what) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer() ||
      j[key].get<int64_t>() < 0)
    throw Error(what + ": '" + key + "' must be an integer >= 0");
  return j[key].get<int64_t>();
}

std::vector<int64_t> shape(const json &j, const std::string &what) {
  if (!j.is_object() || !j.contains("shape") || !j["shape"].is_array())
    throw Error(what + ": 'shape' must be a list of dimensions");
  std::vector<int64_t> dims;
  for (const json &d : j["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      throw Error(what + ": 'shape' must be a list of dimensions");
    dims.push_back(d.get<int64_t>());
  }
  if (elementCount(dims) == INT64_MAX)
    throw Error(what + ": 'shape' has too many elements");
  return dims;
}

} // namespace

PieceDesc parsePiece(const json &j, const std::string &what) {
  PieceDesc piece;
  piece.shape = shape(j, what);
  std::vector<int64_t> slice = piece.shape;
  if (j.contains("shard")) {
    const json &s = j["shard"];
    std::string at = what + ": shard";
    ShardDesc d{count(s, "dim", at), count(s, "blocks", at),
                count(s, "index", at), count(s, "count", at)};
    if (d.dim >= int64_t(slice.size()) || d.blocks < 1 || d.count < 1 ||
        d.index >= d.count || slice[d.dim] % (d.blocks * d.count))
      throw Error(at + ": dimension " + std::to_string(d.dim) + " of " +
                  shapeString(slice) + " cannot be split in " +
                  std::to_string(d.blocks) + " blocks of " +
                  std::to_string(d.count) + " parts, part " +
                  std::to_string(d.index));
    piece.shard = d;
    slice = piece.localShape();
  }
  if (j.contains("flat_shard")) {
    const json &s = j["flat_shard"];
    std::string at = what + ": flat_shard";
    FlatShardDesc d{shape(s, at), count(s, "index", at), count(s, "count", at)};
    if (d.shape != slice)
      throw Error(at + ": a piece of " + shapeString(d.shape) +
                  ", the tensor (slice) is " + shapeString(slice));
    if (d.count < 1 || d.index >= d.count)
      throw Error(at + ": needs count >= 1 and index < count");
    piece.flatShard = d;
  }
  return piece;
}

void WholeTensors::add(const std::string &name, DType dtype,
                       const PieceDesc &piece, const std::string &bytes,
                       const std::string &what) {
  int64_t size = dtypeSize(dtype);
  std::string label = what + ": '" + name + "'";
  if (int64_t(bytes.size()) != elementCount(piece.localShape()) * size)
    throw Error(label + ": " + std::to_string(bytes.size()) +
                " bytes, its piece is " + shapeString(piece.localShape()) +
                " " + dtypeName(dtype));
  int64_t slices = piece.shard ? piece.shard->count : 1;
  int64_t pieces = piece.flatShard ? piece.flatShard->count : 1;
  auto [it, first] = tensors.try_emplace(name);
  Whole &whole = it->second;
  if (first) {
    whole = {dtype,  piece.shape,
             std::string(elementCount(piece.shape) * size, '\0'),
             slices, pieces,
             {}};
  } else if (whole.dtype != dtype || whole.shape != piece.shape ||
             whole.slices != slices || whole.pieces != pieces) {
    throw Error(label + ": pieces of different tensors (" +
                shapeString(whole.shape) + " " + dtypeName(whole.dtype) +
                " in " + std::to_string(whole.slices) + " x " +
                std::to_string(whole.pieces) + ", then " +
                shapeString(piece.shape) + " " + dtypeName(dtype) + " in " +
                std::to_string(slices) + " x " + std::to_string(pieces) + ")");
  }
  std::pair<int64_t, int64_t> at{piece.shard ? piece.shard->index : 0,
                                 piece.flatShard ? piece.flatShard->index : 0};
  // A position already filled is a replica's copy: the first stands.
  if (whole.filled.insert(at).second)
    placePiece(whole.bytes, piece, size, bytes);
}

const WholeTensors::Whole &WholeTensors::get(const std::string &name,
                                             const std::string &what) const {
  auto it = tensors.find(name);
  if (it == tensors.end())
    throw Error(what + ": no shard holds '" + name + "'");
  const Whole &whole = it->second;
  int64_t need = whole.slices * whole.pieces;
  if (int64_t(whole.filled.size()) != need)
    throw Error(what + ": '" + name + "': the shards hold " +
                std::to_string(whole.filled.size()) + " of its " +
                std::to_string(need) + " pieces");
  return whole;
}

} // namespace weft::rt
