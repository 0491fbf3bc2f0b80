//===- TensorParallel.cpp - find Megatron blocks and their shards ---------===//
//
// One walk over the forward graph in op order propagates shardings from the
// column-parallel linears it meets and from the vocab tables sharded before
// it (TensorParallel.h). Each opens a block; values sharded by two blocks
// join them (Q and K meet in the attention scores). A block closes at
// row-parallel linears, embedding lookups or the vocab loss; one that meets
// an op without a rule fails; failed blocks are replicated and the walk
// repeats until none fails.
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/TensorParallel.h"

#include "TensorParallelPatterns.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"

using namespace mlir;

namespace weft {

SmallVector<int64_t> localShape(ArrayRef<int64_t> shape, Sharding s,
                                int64_t parts) {
  SmallVector<int64_t> out(shape);
  if (s.isSplit())
    out[s.dim] /= parts;
  return out;
}

namespace {

using namespace tp;

/// One walk over the graph with a set of column linears excluded.
class Walk {
public:
  Walk(func::FuncOp func, int64_t parts,
       const llvm::DenseSet<Operation *> &excluded)
      : func(func), parts(parts), excluded(excluded) {}

  struct Block {
    Operation *start = nullptr;
    /// rows: where the block closes (row-parallel linears, embedding
    /// lookups, the vocab loss); the vocab ones also in their own lists.
    SmallVector<Operation *> columns, rows, vocabGathers, vocabLosses;
    SmallVector<TensorParallelSplit::Entry> entries;
    /// When the block failed where another block's value met it sharded
    /// along another dimension (k or v split inside a head: fewer kv heads
    /// than T), that block's columns: replicated alone on the next walk.
    SmallVector<Operation *> culprits;
    Operation *failedAt = nullptr;
    std::string reason;
    bool megatron = false; ///< reaches a linear (opensBlock)
  };

  void run() {
    // Vocab tables are sharded by rows before the walk: their lookups come
    // first in op order, their head last.
    for (BlockArgument arg : func.getArguments())
      if (Operation *start = vocabTableStart(arg, parts);
          start && !excluded.contains(start))
        set(arg, Sharding::split(0), open(start));
    for (Operation &op : func.getBody().front())
      visit(&op);
  }

  /// The blocks, one per class of joined column linears.
  std::vector<Block> blocks() {
    std::vector<Block> out;
    llvm::DenseMap<int64_t, size_t> index;
    for (int64_t r = 0; r < int64_t(opened.size()); ++r) {
      int64_t leader = joined.getLeaderValue(r);
      auto [it, first] = index.insert({leader, out.size()});
      if (first)
        out.push_back(
            {opened[leader].start, {}, {}, {}, {}, {}, {}, nullptr, "", false});
      Block &b = out[it->second];
      const Block &part = opened[r];
      b.megatron |= part.megatron;
      b.columns.append(part.columns);
      b.rows.append(part.rows);
      b.vocabGathers.append(part.vocabGathers);
      b.vocabLosses.append(part.vocabLosses);
      b.entries.append(part.entries);
      b.culprits.append(part.culprits);
      if (part.failedAt && !b.failedAt) {
        b.failedAt = part.failedAt;
        b.reason = part.reason;
      }
    }
    return out;
  }

  llvm::DenseMap<Value, Sharding> shardings;

private:
  Sharding get(Value v) const {
    auto it = shardings.find(v);
    if (it == shardings.end() || it->second.isPartial())
      return Sharding::replicated(); // g made it replicated
    return it->second;
  }

  void set(Value v, Sharding s, int64_t block) {
    shardings[v] = s;
    if (s.isSplit())
      blockOf[v] = block;
  }

  int64_t open(Operation *start) {
    opened.push_back(
        {start, {}, {}, {}, {}, {}, {}, nullptr, "", opensBlock(start)});
    joined.insert(opened.size() - 1);
    return opened.size() - 1;
  }

  /// Shards the weight `rhs` (a parameter or its transpose) as `s`.
  void shardWeight(Value rhs, Sharding s, int64_t block) {
    set(rhs, s, block);
    if (auto t = rhs.getDefiningOp<TransposeOp>())
      set(t.getInput(), Sharding::split(1 - s.dim, s.blocks), block);
  }

  void fail(Operation *op, int64_t block, const std::string &reason) {
    Block &b = opened[joined.getLeaderValue(block)];
    if (!b.failedAt) {
      b.failedAt = op;
      b.reason = reason;
    }
  }

  /// Blames the block that sharded `v` (its own columns, before joins)
  /// for the failure at the op `v` meets another shard in.
  void blame(Value v, int64_t block) {
    const Block &own = opened[blockOf.lookup(v)];
    opened[joined.getLeaderValue(block)].culprits.append(own.columns);
  }

  void visit(Operation *op) {
    // The sharded operands, and the block they join.
    int64_t block = -1;
    bool anySplit = false;
    for (Value v : op->getOperands())
      if (get(v).isSplit()) {
        anySplit = true;
        int64_t b = blockOf.lookup(v);
        if (block < 0)
          block = b;
        else
          joined.unionSets(block, b);
      }
    if (!anySplit) {
      openColumn(op);
      return;
    }
    std::string reason = rule(op, block);
    if (!reason.empty()) {
      fail(op, block, reason);
      for (Value r : op->getResults())
        shardings.erase(r);
    }
  }

  /// A column-parallel linear: replicated activation x 2-D weight.
  void openColumn(Operation *op) {
    std::optional<Linear> linear = linearOf(op);
    if (!linear || excluded.contains(op))
      return;
    int64_t n = shapeOf(linear->w)[linear->nDim];
    Value y = op->getResult(0);
    int64_t blocks = fusedBlocks(y);
    int64_t b = open(op);
    opened[b].columns.push_back(op);
    if (n % (blocks * parts)) {
      fail(op, b,
           "its " + std::to_string(n) + " output features" +
               (blocks > 1 ? " (" + std::to_string(blocks) + " blocks)" : "") +
               " do not split " + std::to_string(parts) + " ways");
      return;
    }
    // A gemm's bias is sliced with the features it is added to.
    if (linear->bias) {
      if (!isOwnedParam(linear->bias) || rankOf(linear->bias) != 1 ||
          shapeOf(linear->bias)[0] != n) {
        fail(op, b,
             "its bias is not a [" + std::to_string(n) +
                 "] parameter of its own");
        return;
      }
      set(linear->bias, Sharding::split(0, blocks), b);
    }
    shardWeight(linear->w, Sharding::split(linear->nDim, blocks), b);
    set(y, Sharding::split(rankOf(y) - 1, blocks), b);
  }

  /// Applies op's rule to its sharded operands; returns why it cannot.
  std::string rule(Operation *op, int64_t block) {
    auto same = [&](Sharding s) {
      for (Value r : op->getResults())
        set(r, s, block);
      return std::string();
    };
    Value x = op->getNumOperands() ? op->getOperand(0) : Value();
    Sharding s = x ? get(x) : Sharding();
    if (isa<func::ReturnOp>(op))
      return "the function returns a sharded value";
    // The op's declared split class (its record, weft/ops/Ops.def).
    switch (splitOf(op)) {
    case ops::Split::Elementwise:
      return elementwise(op, block);
    // A dropout draws its shard's elements of the whole tensor's mask
    // (the rewrite marks it with weft.shard).
    case ops::Split::ElementwiseRandom:
      return same(s);
    // Fused attention is local to each (batch, head): q, k and v sharded
    // alike on a leading dim (the heads, after Megatron's column split).
    case ops::Split::Heads:
      if (s.dim >= rankOf(x) - 2)
        return "it attends over the sharded dimension";
      for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
        // The bias (operand 3) is the same for every head: each rank
        // reads it whole.
        if (i == 3 && !get(operand).isSplit() && shapeOf(operand)[s.dim] == 1)
          continue;
        if (!(get(operand) == s) && !enter(op, i, s, block)) {
          if (get(operand).isSplit())
            blame(operand, block);
          return "its q, k and v are not sharded alike";
        }
      }
      return same(s);
    // Normalises over `axis` alone.
    case ops::Split::Softmax:
      if (normalized(op->getAttrOfType<IntegerAttr>("axis").getInt(),
                     rankOf(x)) == s.dim)
        return "it normalizes over the sharded dimension";
      return same(s);
    // Normalises over [axis, rank) (rotary: rotates the last dim); its
    // other operands (scale, bias, rotary's tables) are replicated and
    // must not extend along the sharded dimension.
    case ops::Split::LayerNorm:
      if (!s.isSplit() ||
          s.dim >= normalized(op->getAttrOfType<IntegerAttr>("axis").getInt(),
                              rankOf(x)))
        return "it normalizes over the sharded dimension";
      for (Value operand : op->getOperands().drop_front()) {
        int64_t d = s.dim - (rankOf(x) - rankOf(operand));
        if (get(operand).isSplit() || (d >= 0 && shapeOf(operand)[d] != 1))
          return "an operand besides its input extends along the sharded "
                 "dimension";
      }
      return same(s);
    // Data movement: the op declares where the shard lands.
    case ops::Split::Layout: {
      auto layout = dyn_cast<SplitLayoutOpInterface>(op);
      if (!layout)
        return "its record's split class is Layout, and it declares no "
               "SplitLayoutOpInterface";
      // Data moves from every operand alike (concat's pieces).
      for (Value operand : op->getOperands())
        if (!(get(operand) == s))
          return "its operands are not sharded alike";
      std::string why;
      std::optional<Sharding> out = layout.splitResults(s, parts, why);
      return out ? same(*out) : why;
    }
    // Megatron's linears and the vocab-parallel ops: patterns over several
    // ops (a block's column and row linears, the table's gathers and its
    // loss), the analysis's own rules below.
    case ops::Split::Linear:
    case ops::Split::Vocab:
      break;
    case ops::Split::None:
      return "the tensor-parallel split has no rule for it";
    }
    if (auto gemm = dyn_cast<GemmOp>(op))
      return rowGemm(gemm, block);
    if (auto gather = dyn_cast<GatherOp>(op)) {
      // A lookup in a vocab table's rows: partial (zeros for the ids other
      // ranks hold), summed by g.
      if (gather.getAxis() != 0 || !get(gather.getData()).isSplit() ||
          get(gather.getData()).dim != 0 || get(gather.getIndices()).isSplit())
        return "a gather of sharded data other than an embedding lookup has "
               "no rule";
      shardings[gather.getResult()] = Sharding::partial();
      opened[block].vocabGathers.push_back(gather);
      opened[block].rows.push_back(gather);
      return "";
    }
    if (auto loss = dyn_cast<SoftmaxCrossEntropyOp>(op)) {
      // Scores sharded by class: the vocab-parallel cross-entropy.
      Sharding scores = get(loss.getScores());
      if (loss != headLoss(loss.getScores()) || !scores.isSplit() ||
          scores.dim != 1 || scores.blocks != 1 ||
          get(loss.getLabels()).isSplit())
        return "a softmax cross-entropy over these sharded scores has no "
               "rule";
      opened[block].vocabLosses.push_back(loss);
      opened[block].rows.push_back(loss);
      return "";
    }
    if (auto mm = dyn_cast<MatMulOp>(op))
      return matmul(mm, block);
    return "the tensor-parallel split has no rule for it";
  }

  /// Numpy broadcasting: every sharded operand must agree on the result
  /// dimension; a replicated operand must not extend along it, except a
  /// parameter of its own (a bias), which is sharded alike, and a splat
  /// constant read only here (GPT-NeoX's baddbmm of zeros), whose every
  /// shard is the same splat.
  std::string elementwise(Operation *op, int64_t block) {
    int64_t rank = rankOf(op->getResult(0));
    std::optional<Sharding> out;
    for (Value v : op->getOperands()) {
      Sharding s = get(v);
      if (!s.isSplit())
        continue;
      Sharding aligned = Sharding::split(s.dim + rank - rankOf(v), s.blocks);
      if (out && !(*out == aligned))
        return "its operands are sharded along different dimensions";
      out = aligned;
    }
    for (Value v : op->getOperands()) {
      if (get(v).isSplit())
        continue;
      int64_t d = out->dim - (rank - rankOf(v));
      if (d < 0 || shapeOf(v)[d] == 1)
        continue;
      if (!isOwnedParam(v) && !isLocalSplat(v))
        return "a replicated operand extends along the sharded dimension";
      set(v, Sharding::split(d, out->blocks), block);
    }
    for (Value r : op->getResults())
      set(r, *out, block);
    return "";
  }

  /// A splat weft.constant with one reader: sharded, it becomes the same
  /// splat in the local shape (weft-split-tensor-parallel).
  static bool isLocalSplat(Value v) {
    auto constant = v.getDefiningOp<ConstantOp>();
    auto attr = constant ? dyn_cast<DenseElementsAttr>(constant.getValueAttr())
                         : DenseElementsAttr();
    return attr && attr.isSplat() && v.hasOneUse();
  }

  /// Whether replicated operand `index` of `op` can enter the block as
  /// `s`, each rank taking its part (an Entry): an activation computed
  /// whole on every rank (not a parameter, whose shard would be its own
  /// block's), split evenly; for weft.attention's k and v with fewer heads
  /// than q, the part of their repetition to q's heads.
  bool enter(Operation *op, unsigned index, Sharding s, int64_t block) {
    Value v = op->getOperand(index);
    // Only a replicated value enters: a sharded one (multi-query v, split
    // along its head dim by its own column) is another block's.
    if (get(v).isSplit() || isa<BlockArgument>(v) ||
        v.getDefiningOp<ConstantOp>() || s.blocks != 1 || !s.isSplit() ||
        s.dim >= rankOf(v))
      return false;
    int64_t n = shapeOf(v)[s.dim];
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      // [B, H, S, D] q sharded by heads, k and v with H or Hkv heads: the
      // rewrite repeats them to q's H heads and takes the rank's part.
      if (rankOf(v) != 4 || attention.getLayout() || s.dim != 1)
        return false;
      n = shapeOf(attention.getQ())[1]; // q's heads, whole
    }
    if (n % parts)
      return false;
    opened[block].entries.push_back({op, index, s});
    return true;
  }

  /// A gemm of a sharded activation is a row-parallel linear when the
  /// shard is along K and the weight a parameter of its own; its bias term
  /// (beta C, replicated) is added after the all-reduce (the rewrite moves
  /// it out of the gemm).
  std::string rowGemm(GemmOp gemm, int64_t block) {
    std::optional<Linear> linear = linearOf(gemm);
    Sharding sa = get(gemm.getA());
    if (!linear || !sa.isSplit() || sa.dim != 1 || get(gemm.getB()).isSplit())
      return "a gemm of a sharded value that is no row-parallel linear has "
             "no rule";
    shardWeight(linear->w, Sharding::split(linear->kDim, sa.blocks), block);
    shardings[gemm.getResult()] = Sharding::partial();
    opened[block].rows.push_back(gemm);
    return "";
  }

  /// Batched matmul [.., M, K] x [.., K, N]: shards along a batch dimension
  /// (attention heads), M or N carry over; a shard along K on both sides is
  /// a row-parallel linear, whose result is partial.
  std::string matmul(MatMulOp mm, int64_t block) {
    Value a = mm.getLhs(), w = mm.getRhs();
    int64_t ra = rankOf(a), rb = rankOf(w), r = rankOf(mm.getResult());
    if (ra < 2 || rb < 2)
      return "a matrix-vector product of a sharded value has no rule";
    if (mm.getTransA() || mm.getTransB())
      return "a matmul reading a transposed operand has no rule";
    Sharding sa = get(a), sb = get(w);
    // Row-parallel linear: the weight is sliced along its input features.
    if (sa.isSplit() && sa.dim == ra - 1 && !sb.isSplit() && weightParam(w)) {
      shardWeight(w, Sharding::split(0, sa.blocks), block);
      shardings[mm.getResult()] = Sharding::partial();
      opened[block].rows.push_back(mm);
      return "";
    }
    auto alignedA = sa.isSplit() ? sa.dim + r - ra : -1;
    auto alignedB = sb.isSplit() ? sb.dim + r - rb : -1;
    bool batchA = sa.isSplit() && sa.dim < ra - 2;
    bool batchB = sb.isSplit() && sb.dim < rb - 2;
    if (batchA || batchB) {
      if (sa.isSplit() && sb.isSplit() &&
          (alignedA != alignedB || sa.blocks != sb.blocks)) {
        // The side not sharded along a batch dim (the heads) is the one
        // split inside a head.
        blame(batchA && !batchB ? w : a, block);
        return "its operands are sharded along different dimensions";
      }
      // The unsharded side must broadcast along the shard.
      Value other = batchA ? w : a;
      Sharding s = batchA ? sa : sb;
      int64_t aligned = batchA ? alignedA : alignedB;
      if (!get(other).isSplit()) {
        int64_t d = aligned - (r - rankOf(other));
        if (d >= 0 && shapeOf(other)[d] != 1 &&
            !enter(mm, batchA ? 1 : 0, Sharding::split(d, s.blocks), block))
          return "a replicated operand extends along the sharded dimension";
      }
      set(mm.getResult(), Sharding::split(aligned, s.blocks), block);
      return "";
    }
    if (sa.isSplit() && sa.dim == ra - 2 && !sb.isSplit()) {
      set(mm.getResult(), Sharding::split(r - 2, sa.blocks), block);
      return "";
    }
    if (sb.isSplit() && sb.dim == rb - 1 && !sa.isSplit()) {
      // A replicated activation times sharded columns (the vocab head):
      // its gradient is partial, so it enters through f.
      set(mm.getResult(), Sharding::split(r - 1, sb.blocks), block);
      opened[block].columns.push_back(mm);
      return "";
    }
    return "its operands' shards do not meet in a local product";
  }

  func::FuncOp func;
  int64_t parts;
  const llvm::DenseSet<Operation *> &excluded;
  std::vector<Block> opened;
  llvm::EquivalenceClasses<int64_t> joined;
  llvm::DenseMap<Value, int64_t> blockOf;
};

} // namespace

namespace {

/// A value of `entered` the columns' results reach, through any ops but
/// another linear; null if none.
Value enteredFrom(ArrayRef<Operation *> columns,
                  const llvm::DenseSet<Value> &entered) {
  SmallVector<Value> work;
  for (Operation *column : columns)
    work.push_back(column->getResult(0));
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (entered.contains(v))
      return v;
    for (Operation *user : v.getUsers())
      if (!linearOf(user))
        work.append(user->getResults().begin(), user->getResults().end());
  }
  return {};
}

/// The warning of a replicated kv projection: why, and what it costs.
std::string replicatedKvReason(const Walk::Block &b, int64_t parts,
                               Value reached) {
  int64_t weights = 0;
  for (Operation *column : b.columns)
    if (std::optional<Linear> linear = linearOf(column))
      weights += shapeOf(linear->w)[0] * shapeOf(linear->w)[1];
  return b.reason + "; computed whole on every rank instead, each rank " +
         "reading its query heads' part of " + nodeOf(reached.getDefiningOp()) +
         ": " + std::to_string(weights) + " weights replicated (" +
         std::to_string(weights - weights / parts) +
         " more per rank) and their FLOPs " + std::to_string(parts) +
         " times over";
}

} // namespace

FailureOr<TensorParallelSplit>
analyzeTensorParallel(func::FuncOp func, int64_t parts,
                      TensorParallelFallback fallback) {
  TensorParallelSplit result;
  llvm::DenseSet<Operation *> excluded;
  // Megatron blocks that failed, replicated for the next walk; whether
  // each is an error is known once the walks settle.
  std::vector<Walk::Block> failed;
  for (;;) {
    Walk walk(func, parts, excluded);
    walk.run();
    bool again = false;
    std::vector<Walk::Block> blocks = walk.blocks();
    for (const Walk::Block &b : blocks) {
      if (b.failedAt && !b.culprits.empty()) {
        // Only the blamed columns are replicated; the rest is tried again
        // without them.
        Walk::Block culprit = b;
        culprit.start = b.culprits.front();
        culprit.columns = b.culprits;
        culprit.reason = "its shard lies inside a head (fewer kv heads than "
                         "ranks) where " +
                         nodeOf(b.failedAt) + " meets it";
        failed.push_back(culprit);
        excluded.insert(b.culprits.begin(), b.culprits.end());
        again = true;
        continue;
      }
      if (b.failedAt || b.rows.empty()) {
        // A linear that reaches no other linear is no Megatron block (an LM
        // head feeding the loss): replicated without a word.
        if (b.failedAt && b.megatron)
          failed.push_back(b);
        excluded.insert(b.columns.begin(), b.columns.end());
        excluded.insert(b.start); // a vocab table's first use
        again = true;
      }
    }
    if (again)
      continue;
    // A failed block whose values another block reads through entries
    // (grouped-query attention's k and v projections when `parts` does
    // not divide the kv heads) is replicated by design, and said so;
    // any other is the user's to fix, or to replicate on request.
    llvm::DenseSet<Value> entered;
    for (const Walk::Block &b : blocks)
      for (const TensorParallelSplit::Entry &e : b.entries)
        entered.insert(e.op->getOperand(e.index));
    for (const Walk::Block &b : failed) {
      if (Value reached = enteredFrom(b.columns, entered)) {
        result.replicated.push_back(
            {b.start, replicatedKvReason(b, parts, reached)});
        continue;
      }
      if (fallback == TensorParallelFallback::Error)
        return b.failedAt->emitError("tensor parallelism: cannot split ")
               << nodeOf(b.failedAt)
               << (b.failedAt == b.start
                       ? ""
                       : " in the block that starts at " + nodeOf(b.start))
               << ": " << b.reason
               << " (--tensor-parallel-fallback=replicate leaves the "
                  "block replicated)";
      result.replicated.push_back({b.failedAt, b.reason});
    }
    result.shardings = std::move(walk.shardings);
    for (const Walk::Block &b : blocks) {
      result.columnLinears.append(b.columns);
      for (Operation *row : b.rows)
        if (isa<MatMulOp, GemmOp>(row))
          result.rowLinears.push_back(row);
      result.vocabGathers.append(b.vocabGathers);
      result.vocabLosses.append(b.vocabLosses);
      result.entries.append(b.entries);
    }
    auto byOrder = [](Operation *x, Operation *y) {
      return x->isBeforeInBlock(y);
    };
    llvm::sort(result.columnLinears, byOrder);
    llvm::sort(result.rowLinears, byOrder);
    llvm::sort(result.vocabGathers, byOrder);
    llvm::sort(result.vocabLosses, byOrder);
    return result;
  }
}

} // namespace weft
