//===- TensorParallel.h - Megatron's tensor-parallel split -----*- C++ -*-===//
//
// Which values of a forward graph a T-way tensor-parallel program shards,
// and how (Shoeybi et al., "Megatron-LM", 2019, Section 3; Korthikanti et
// al., "Reducing Activation Recomputation in Large Transformer Models",
// 2022, Section 3 and Figure 4).
//
// A *block* starts at column-parallel linears (a matmul of a replicated
// activation and a 2-D parameter, or its transpose: each rank holds a slice
// of the output features) and ends at row-parallel linears (a matmul of
// that sharded activation and a parameter sliced along its input features:
// each rank holds a partial sum, which an all-reduce completes). In between
// every op must keep the shard local: elementwise ops, reshapes that move
// the sharded dimension (hidden -> heads), transposes, batched matmuls over
// the sharded heads, softmax over another axis. Megatron's MLP (column ->
// GELU -> row) and self-attention (QKV column -> heads -> core attention ->
// output projection row) are such blocks; the analysis finds them by this
// rule on any imported graph, not by names.
//
// Vocab parallelism: a [V, h] parameter used as a word embedding (gathered
// by the model's input ids) and/or as the LM head's weight feeding a
// softmax cross-entropy (the tied `wte` of GPT) is sharded by rows when T
// divides V: the lookups become masked gathers summed by g, the head a
// column-parallel product, the loss a cross-entropy that never gathers the
// logits (Megatron-LM's VocabParallelEmbedding and
// vocab_parallel_cross_entropy).
//
// The shard of a value is `Sharding` (weft/Dialect/Weft/IR/Sharding.h);
// how a split passes through an op is the op's split class (Ops.def), and
// for the ops that move data (Layout) their SplitLayoutOpInterface.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_TENSORPARALLEL_H
#define WEFT_ANALYSIS_TENSORPARALLEL_H

#include "weft/Dialect/Weft/IR/Sharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace weft {

/// The local shape of a `shape` value sharded `s` over `parts` ranks: the
/// split dimension divided by `parts`.
llvm::SmallVector<int64_t> localShape(llvm::ArrayRef<int64_t> shape, Sharding s,
                                      int64_t parts);

/// The outcome of the analysis.
struct TensorParallelSplit {
  /// Every value the program shards (absent: replicated), parameters
  /// (function arguments) included.
  llvm::DenseMap<mlir::Value, Sharding> shardings;
  /// Column-parallel linears (their activation operand gets Megatron's f)
  /// and row-parallel linears (their result gets g, an all-reduce), in op
  /// order.
  llvm::SmallVector<mlir::Operation *> columnLinears, rowLinears;
  /// Vocab parallelism (Megatron's VocabParallelEmbedding and
  /// vocab_parallel_cross_entropy): embedding gathers from a row-sharded
  /// table (each becomes a masked gather whose partial result g sums) and
  /// losses over class-sharded scores (each becomes the cross-entropy that
  /// all-reduces row maxima and sums, never the logits).
  llvm::SmallVector<mlir::Operation *> vocabGathers, vocabLosses;
  /// Replicated activations a block reads along its sharded dimension:
  /// each rank takes its part (`shard.all_slice`, whose adjoint all-gathers
  /// the complete gradient). Grouped-query attention's k and v when T
  /// does not divide the kv heads: operand `index` of `op` (a batched
  /// matmul or weft.attention) is read sharded as `sharding`; for a
  /// weft.attention whose k and v have fewer heads than q, the rewrite
  /// first repeats them to q's heads (repeat_kv).
  struct Entry {
    mlir::Operation *op;
    unsigned index;
    Sharding sharding;
  };
  llvm::SmallVector<Entry> entries;
  /// Blocks left replicated by `--tensor-parallel-fallback=replicate`, and
  /// (always) the kv projections of grouped-query attention whose heads
  /// `parts` does not divide (their values enter through `entries`): the
  /// op that could not be split, and why.
  llvm::SmallVector<std::pair<mlir::Operation *, std::string>> replicated;
};

enum class TensorParallelFallback { Error, Replicate };

/// Finds the blocks of `func` (a forward graph) and the shard of every value
/// for `parts`-way tensor parallelism. A block with an op that cannot keep
/// the shard local (a LayerNorm over the sharded features, a dropout that
/// draws a mask, a slice across the shard, a dimension `parts` does not
/// divide, ...) is an error at that op naming it and the block's first
/// linear, or, with Fallback::Replicate, left replicated and listed in
/// `replicated`. Linears that start no block (an LM head feeding the loss)
/// stay replicated without a word.
llvm::FailureOr<TensorParallelSplit>
analyzeTensorParallel(mlir::func::FuncOp func, int64_t parts,
                      TensorParallelFallback fallback);

} // namespace weft

#endif // WEFT_ANALYSIS_TENSORPARALLEL_H
