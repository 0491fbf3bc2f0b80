//===- ReshardTest.cpp - whole tensors from a checkpoint's pieces ---------===//

#include "weft/runtime/Reshard.h"
#include "weft/runtime/Shard.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

/// A [4x6] float32 tensor holding 0, 1, 2, ... (as bytes).
std::string wholeTensor() {
  std::vector<float> v(24);
  std::iota(v.begin(), v.end(), 0.f);
  return std::string(reinterpret_cast<const char *>(v.data()), 96);
}

/// Each piece of `whole` cut by `tensor` tensor-parallel ranks (dim 1, in
/// `blocks` blocks) and then `data` ZeRO ranks, described and sliced as
/// a checkpoint shard holds them.
std::vector<std::pair<PieceDesc, std::string>>
cut(const std::string &whole, int64_t tensor, int64_t blocks, int64_t data) {
  std::vector<std::pair<PieceDesc, std::string>> pieces;
  std::vector<int64_t> shape{4, 6};
  for (int64_t t = 0; t < tensor; ++t)
    for (int64_t d = 0; d < data; ++d) {
      PieceDesc p{shape, std::nullopt, std::nullopt};
      std::string bytes = whole;
      if (tensor > 1) {
        p.shard = ShardDesc{1, blocks, t, tensor};
        bytes = sliceShard(bytes, shape, 4, *p.shard);
      }
      if (data > 1) {
        std::vector<int64_t> slice = shape;
        slice[1] /= tensor;
        p.flatShard = FlatShardDesc{slice, d, data};
        bytes = sliceFlatShard(bytes, 4, *p.flatShard);
      }
      pieces.push_back({p, bytes});
    }
  return pieces;
}

} // namespace

TEST(Reshard, PiecesOfEveryLayoutAssembleTheWholeTensor) {
  std::string whole = wholeTensor();
  // T x blocks x D, with padded flat pieces (12 or 6 elements over 4 or 5).
  for (auto [tensor, blocks, data] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1},
                                                          {2, 1, 1},
                                                          {1, 1, 4},
                                                          {2, 1, 4},
                                                          {2, 3, 1},
                                                          {1, 1, 5},
                                                          {2, 1, 5}}) {
    WholeTensors wholes;
    for (auto &[piece, bytes] : cut(whole, tensor, blocks, data)) {
      // slicePiece (what loading and resharding take) is the slice, then
      // the flat piece.
      EXPECT_EQ(slicePiece(whole, piece, 4), bytes);
      // The manifest's form round-trips.
      PieceDesc parsed = parsePiece(pieceJson(piece), "w");
      EXPECT_EQ(pieceJson(parsed), pieceJson(piece));
      wholes.add("w", DType::F32, parsed, bytes, "ckpt");
    }
    EXPECT_EQ(wholes.get("w", "ckpt").bytes, whole)
        << "T=" << tensor << " blocks=" << blocks << " D=" << data;
  }
}

TEST(Reshard, TheFirstReplicaWinsAndMissingPiecesAreNamed) {
  std::string whole = wholeTensor();
  auto pieces = cut(whole, 1, 1, 2);
  WholeTensors wholes;
  wholes.add("w", DType::F32, pieces[0].first, pieces[0].second, "ckpt");
  try {
    wholes.get("w", "ckpt");
    FAIL() << "half a tensor was accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "ckpt: 'w': the shards hold 1 of its 2 pieces");
  }
  // Another replica's copy of piece 0 (different bytes) does not replace it.
  wholes.add("w", DType::F32, pieces[0].first, std::string(48, '\x7f'), "ckpt");
  wholes.add("w", DType::F32, pieces[1].first, pieces[1].second, "ckpt");
  EXPECT_EQ(wholes.get("w", "ckpt").bytes, whole);
  try {
    wholes.get("v", "ckpt");
    FAIL() << "an absent tensor was accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "ckpt: no shard holds 'v'");
  }
}

namespace {
std::string rejection(const json &j) {
  try {
    parsePiece(j, "w");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST(Reshard, NamesEveryMalformedPiece) {
  json ok = {{"shape", {4, 6}},
             {"shard", {{"dim", 1}, {"blocks", 1}, {"index", 1}, {"count", 2}}},
             {"flat_shard", {{"shape", {4, 3}}, {"index", 0}, {"count", 2}}}};
  EXPECT_EQ(rejection(ok), "");
  auto with = [&](const json::json_pointer &at, json value) {
    json j = ok;
    j[at] = std::move(value);
    return rejection(j);
  };
  EXPECT_EQ(with("/shape"_json_pointer, {4, -6}),
            "w: 'shape' must be a list of dimensions");
  EXPECT_EQ(with("/shape"_json_pointer, {1LL << 40, 1LL << 40}),
            "w: 'shape' has too many elements");
  EXPECT_EQ(with("/shard/dim"_json_pointer, 2),
            "w: shard: dimension 2 of [4x6] cannot be split in 1 blocks of "
            "2 parts, part 1");
  EXPECT_EQ(with("/shard/count"_json_pointer, 4),
            "w: shard: dimension 1 of [4x6] cannot be split in 1 blocks of "
            "4 parts, part 1");
  EXPECT_EQ(with("/shard/index"_json_pointer, "1"),
            "w: shard: 'index' must be an integer >= 0");
  EXPECT_EQ(with("/flat_shard/shape"_json_pointer, {4, 6}),
            "w: flat_shard: a piece of [4x6], the tensor (slice) is [4x3]");
  EXPECT_EQ(with("/flat_shard/index"_json_pointer, 2),
            "w: flat_shard: needs count >= 1 and index < count");
  // A piece whose bytes are not its size.
  WholeTensors wholes;
  try {
    wholes.add("w", DType::F32, parsePiece(ok, "w"), std::string(4, '\0'),
               "ckpt");
    FAIL() << "a short piece was accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "ckpt: 'w': 4 bytes, its piece is [6] f32");
  }
}
