//===- SplitLayout.cpp - how a tensor-parallel shard passes data movement -===//
//
// SplitLayoutOpInterface on the ops whose record's Split class is Layout:
// each says where the shard of its operand lands in its results, so the
// tensor-parallel analysis keeps no per-op rule for them.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace weft;

namespace {

llvm::ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

int64_t normalized(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

} // namespace

std::optional<Sharding> weft::reshapeSharding(ArrayRef<int64_t> in,
                                              ArrayRef<int64_t> out, Sharding s,
                                              int64_t parts) {
  if (!s.isSplit())
    return s;
  // Over the row-major flat index f, rank t holds the elements with
  // (f / chunk) mod parts == t, chunk = (n / (blocks parts)) * inner. That
  // function determines chunk, so a split of the result holds the same
  // elements iff it has the same chunk: (o_j / (c parts)) * inner_j = chunk.
  int64_t inner = 1;
  for (int64_t i = s.dim + 1; i < int64_t(in.size()); ++i)
    inner *= in[i];
  int64_t chunk = in[s.dim] / (s.blocks * parts) * inner;
  int64_t innerOut = 1;
  for (int64_t j = int64_t(out.size()) - 1; j >= 0; innerOut *= out[j--]) {
    if (chunk % innerOut)
      continue;
    int64_t perRankRun = chunk / innerOut; // o_j / (c parts)
    if (out[j] % (perRankRun * parts))
      continue;
    return Sharding::split(j, out[j] / (perRankRun * parts));
  }
  return std::nullopt;
}

/// The permutation moves the sharded dimension.
std::optional<Sharding> TransposeOp::splitResults(Sharding s, int64_t,
                                                  std::string &) {
  ArrayRef<int64_t> perm = getPerm();
  return Sharding::split(llvm::find(perm, s.dim) - perm.begin(), s.blocks);
}

/// Rank t's elements of the operand must be exactly its elements of the
/// result (reshapeSharding).
std::optional<Sharding> ReshapeOp::splitResults(Sharding s, int64_t parts,
                                                std::string &why) {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  if (std::optional<Sharding> result = reshapeSharding(in, out, s, parts))
    return result;
  llvm::raw_string_ostream os(why);
  os << "reshaping ";
  llvm::interleave(in, os, "x");
  os << " (dimension " << s.dim << " sharded " << parts << " ways) to ";
  llvm::interleave(out, os, "x");
  os << " mixes the ranks' shards (do " << parts << " ranks divide the heads?)";
  return std::nullopt;
}

/// A broadcast along other dimensions keeps the shard (GQA's repeat_kv
/// expands a kv head over its query group, beside the sharded heads); one
/// along the sharded dimension would repeat a shard where others belong.
std::optional<Sharding> ExpandOp::splitResults(Sharding s, int64_t,
                                               std::string &why) {
  ArrayRef<int64_t> in = shapeOf(getInput()), out = getType().getShape();
  int64_t dim = s.dim + int64_t(out.size()) - int64_t(in.size());
  if (in[s.dim] != out[dim]) {
    why = "it broadcasts along the sharded dimension";
    return std::nullopt;
  }
  return Sharding::split(dim, s.blocks);
}

/// Pieces joined along another axis keep the shard (the tensor-parallel
/// walk holds every piece to operand 0's sharding); along the sharded one
/// each rank would hold a piece of every part.
std::optional<Sharding> ConcatOp::splitResults(Sharding s, int64_t,
                                               std::string &why) {
  if (normalized(getAxis(), getType().getRank()) == s.dim) {
    why = "it concatenates along the sharded dimension";
    return std::nullopt;
  }
  return s;
}

/// Along another axis every piece keeps the shard; along the sharded one,
/// only the pieces that are its blocks (a fused QKV split into Q, K, V).
std::optional<Sharding> SplitOp::splitResults(Sharding s, int64_t,
                                              std::string &why) {
  if (normalized(getAxis(), shapeOf(getInput()).size()) != s.dim)
    return s;
  ArrayRef<int64_t> sizes = getSizes();
  if (s.blocks != int64_t(sizes.size()) || !llvm::all_equal(sizes)) {
    why = "it cuts the sharded dimension into other pieces than the "
          "shards' blocks";
    return std::nullopt;
  }
  return Sharding::split(s.dim, 1);
}

/// The whole sharded dimension (whatever the slice takes of the others:
/// rotary's halves of the head dimension), or exactly one of its blocks.
std::optional<Sharding> SliceOp::splitResults(Sharding s, int64_t,
                                              std::string &why) {
  int64_t n = shapeOf(getInput())[s.dim];
  if (getStarts()[s.dim] == 0 && getEnds()[s.dim] >= n &&
      getSteps()[s.dim] == 1)
    return s;
  int64_t width = blockWidth(s.dim);
  if (width == n)
    return s;
  if (width && width * s.blocks == n)
    return Sharding::split(s.dim, 1);
  why = "it slices the sharded dimension other than along the shards' "
        "blocks";
  return std::nullopt;
}

int64_t SliceOp::blockWidth(int64_t dim) {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    int64_t start = getStarts()[d], end = getEnds()[d];
    if (getSteps()[d] != 1)
      return 0;
    if (d != dim && (start != 0 || end < shape[d]))
      return 0;
  }
  int64_t start = getStarts()[dim], end = std::min(getEnds()[dim], shape[dim]);
  int64_t width = end - start;
  if (width <= 0 || shape[dim] % width || start % width)
    return 0;
  return width;
}
