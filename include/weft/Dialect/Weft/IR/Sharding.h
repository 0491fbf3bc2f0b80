//===- Sharding.h - a value's tensor-parallel shard -------------*- C++ -*-===//
//
// The shard of a value under a T-way tensor-parallel split (Shoeybi et al.,
// "Megatron-LM", 2019, Section 3): replicated, split along one dimension
// (read as [blocks, T, n / (blocks T)], rank t holding [:, t, :], so that a
// fused QKV projection splits each of Q, K and V), or partial (a sum over
// the T ranks, before the all-reduce). Ops declare how a split passes
// through them (SplitLayoutOpInterface); the analysis is
// weft/Analysis/TensorParallel.h.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_SHARDING_H
#define WEFT_DIALECT_WEFT_IR_SHARDING_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>

namespace weft {

struct Sharding {
  enum class Kind { Replicated, Split, Partial };
  Kind kind = Kind::Replicated;
  int64_t dim = -1;   ///< Split: the sharded dimension
  int64_t blocks = 1; ///< Split: independent blocks the dimension holds

  static Sharding replicated() { return {}; }
  static Sharding split(int64_t dim, int64_t blocks = 1) {
    return {Kind::Split, dim, blocks};
  }
  static Sharding partial() { return {Kind::Partial, -1, 1}; }
  bool isSplit() const { return kind == Kind::Split; }
  bool isPartial() const { return kind == Kind::Partial; }
  bool operator==(const Sharding &o) const {
    return kind == o.kind && dim == o.dim && blocks == o.blocks;
  }
};

/// The sharding of a reshape's result when its operand (shape `in`) is
/// split `s` over `parts` ranks, or nullopt when the reshape mixes the
/// shard with other data (e.g. [b, s, h] -> [b, s, heads, dh] keeps it when
/// `parts` divides heads; [b, s, 3h] -> [b, s, 3, h] with 3 blocks moves it
/// to h). Row-major element order: rank t's elements of the operand must be
/// exactly its elements of the result.
std::optional<Sharding> reshapeSharding(llvm::ArrayRef<int64_t> in,
                                        llvm::ArrayRef<int64_t> out, Sharding s,
                                        int64_t parts);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_SHARDING_H
