//===- SequenceParallel.cpp - Megatron's sequence-parallel regions --------===//

#include "weft/Analysis/SequenceParallel.h"

#include "TensorParallelPatterns.h"
#include "weft/Analysis/TensorParallel.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"

using namespace mlir;
using namespace weft;
using weft::tp::nodeOf;
using weft::tp::rankOf;
using weft::tp::shapeOf;

namespace {

/// The sequence dimension of every value of one op, derived from one of
/// them: `aligned` the values that hold the sequence (operands and results),
/// `broadcast` the operands that repeat along it.
struct OpLabels {
  SmallVector<std::pair<Value, int64_t>> aligned;
  SmallVector<Value> broadcast;
};

class RegionBuilder {
public:
  RegionBuilder(int64_t parts) : parts(parts) {}

  /// The op's labels given that `known` (one of its values) holds the
  /// sequence along `dim`, or nullopt when the op cannot keep a sequence
  /// shard local (it must see the whole sequence, or is not one the region
  /// is made of).
  std::optional<OpLabels> labels(Operation *op, Value known,
                                 int64_t dim) const {
    OpLabels l;
    if (tp::isElementwise(op)) {
      // numpy broadcasting aligns shapes at the right.
      Value y = op->getResult(0);
      int64_t r = rankOf(y);
      int64_t d = dim + r - rankOf(known);
      if (d < 0 || shapeOf(y)[d] != shapeOf(known)[dim])
        return std::nullopt;
      l.aligned.push_back({y, d});
      for (Value x : op->getOperands()) {
        int64_t xd = d - (r - rankOf(x));
        if (xd >= 0 && shapeOf(x)[xd] == shapeOf(y)[d])
          l.aligned.push_back({x, xd});
        else
          l.broadcast.push_back(x);
      }
      return l;
    }
    if (splitOf(op) == ops::Split::ElementwiseRandom) {
      for (Value v : op->getOperands())
        l.aligned.push_back({v, dim});
      for (Value v : op->getResults())
        l.aligned.push_back({v, dim});
      return l;
    }
    if (splitOf(op) == ops::Split::LayerNorm) {
      // Normalised over [axis, rank) of operand 0 (the class's `axis`), the
      // other operands the normalised dims' affine parameters: the sequence
      // must come before.
      auto axisAttr = op->getAttrOfType<IntegerAttr>("axis");
      if (!axisAttr)
        return std::nullopt;
      Value input = op->getOperand(0);
      int64_t axis = tp::normalized(axisAttr.getInt(), rankOf(input));
      if (dim >= axis)
        return std::nullopt;
      l.aligned.push_back({input, dim});
      for (Value v : op->getResults())
        l.aligned.push_back({v, dim});
      for (Value v : op->getOperands().drop_front())
        l.broadcast.push_back(v);
      return l;
    }
    if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      bool forward = known == reshape.getInput();
      Value other = forward ? reshape.getResult() : reshape.getInput();
      std::optional<Sharding> s = reshapeSharding(
          shapeOf(known), shapeOf(other), Sharding::split(dim), parts);
      if (!s || !s->isSplit() || s->blocks != 1)
        return std::nullopt;
      l.aligned = {{known, dim}, {other, s->dim}};
      return l;
    }
    if (auto transpose = dyn_cast<TransposeOp>(op)) {
      ArrayRef<int64_t> perm = transpose.getPerm();
      int64_t pos = llvm::find(perm, dim) - perm.begin();
      if (known == transpose.getInput())
        l.aligned = {{known, dim}, {transpose.getResult(), pos}};
      else
        l.aligned = {{transpose.getInput(), perm[dim]}, {known, dim}};
      return l;
    }
    // Megatron's g, reached from its result: it becomes the reduce-scatter
    // that enters the region (its operand, a partial sum, is not sharded).
    if (auto sum = dyn_cast<shard::AllReduceOp>(op);
        sum && known == sum.getResult() &&
        sum.getReduction() == shard::ReductionKind::Sum) {
      l.aligned.push_back({known, dim});
      return l;
    }
    return std::nullopt;
  }

  /// Takes `op` into the region, `known` holding the sequence along `dim`.
  /// Returns false when the op cannot run sharded.
  FailureOr<bool> absorb(Operation *op, Value known, int64_t dim) {
    if (region.ops.contains(op))
      return true;
    std::optional<OpLabels> l = labels(op, known, dim);
    if (!l)
      return false;
    region.ops.insert(op);
    for (auto [v, d] : l->aligned) {
      if (v.getDefiningOp() == op) {
        if (failed(shard(v, d, op)))
          return failure();
      } else if (failed(pull(v, d, op))) {
        return failure();
      }
    }
    for (Value v : l->broadcast)
      if (dependsOnParameter(v))
        region.broadcasts.insert(v);
    return true;
  }

  /// `v` becomes sharded along `dim`; its users are visited later.
  LogicalResult shard(Value v, int64_t dim, Operation *at) {
    auto [it, fresh] = region.sharded.insert({v, dim});
    if (!fresh)
      return agree(it->second, dim, at);
    if (shapeOf(v)[dim] % parts != 0)
      return at->emitError("sequence parallelism: ")
             << nodeOf(at) << " holds the sequence in a dimension of "
             << shapeOf(v)[dim] << ", which " << parts
             << " tensor ranks do not divide";
    work.push_back(v);
    return success();
  }

  /// An operand `user` reads along the sequence: shard it with its
  /// producer when that can run sharded, else slice the rank's part of it.
  LogicalResult pull(Value v, int64_t dim, Operation *user) {
    if (auto it = region.sharded.find(v); it != region.sharded.end())
      return agree(it->second, dim, user);
    if (Operation *def = v.getDefiningOp()) {
      FailureOr<bool> taken = absorb(def, v, dim);
      if (failed(taken))
        return failure();
      if (*taken)
        return success();
    }
    auto [it, fresh] = region.slices.insert({v, dim});
    return fresh ? success() : agree(it->second, dim, user);
  }

  LogicalResult agree(int64_t have, int64_t want, Operation *at) const {
    if (have == want)
      return success();
    return at->emitError("sequence parallelism: ")
           << nodeOf(at) << " reads the sequence in dimension " << want
           << " of a value that holds it in dimension " << have;
  }

  /// Visits the users of every sharded value: region ops absorb them, any
  /// other op reads the value all-gathered.
  LogicalResult grow() {
    while (!work.empty()) {
      Value v = work.pop_back_val();
      int64_t dim = region.sharded.lookup(v);
      for (Operation *user : v.getUsers()) {
        FailureOr<bool> taken = absorb(user, v, dim);
        if (failed(taken))
          return failure();
        if (!*taken)
          region.gathers.insert(v);
      }
    }
    return success();
  }

  bool dependsOnParameter(Value v) {
    if (auto it = dependsMemo.find(v); it != dependsMemo.end())
      return it->second;
    bool depends = false;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
      depends = bool(func.getArgAttr(arg.getArgNumber(), kParamAttr));
    } else {
      depends = llvm::any_of(v.getDefiningOp()->getOperands(),
                             [&](Value x) { return dependsOnParameter(x); });
    }
    return dependsMemo[v] = depends;
  }

  SequenceParallelRegion region;

private:
  int64_t parts;
  SmallVector<Value> work;
  llvm::DenseMap<Value, bool> dependsMemo;
};

/// Whether `v` is a model input of shape [batch, sequence], possibly
/// through reshapes to the same shape (Hugging Face's input_ids.view).
bool isTokenInput(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>()) {
    if (shapeOf(reshape.getInput()) != shapeOf(v))
      return false;
    v = reshape.getInput();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || rankOf(v) != 2)
    return false;
  auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return bool(func.getArgAttr(arg.getArgNumber(), kInputAttr));
}

} // namespace

FailureOr<SequenceParallelRegion>
weft::analyzeSequenceParallel(func::FuncOp func, int64_t parts) {
  RegionBuilder builder(parts);
  bool seeded = false;
  for (Operation &op : func.getBody().front()) {
    // A token embedding: rows of a table gathered by [batch, sequence] ids,
    // the result [batch, sequence, h]; a vocab-parallel one through its g.
    Value ids;
    if (auto gather = dyn_cast<GatherOp>(op); gather && gather.getAxis() == 0)
      ids = gather.getIndices();
    else if (auto gather = dyn_cast<VocabParallelGatherOp>(op))
      ids = gather.getIndices();
    if (!ids || !isTokenInput(ids))
      continue;
    seeded = true;
    Value embedded = op.getResult(0);
    if (isa<VocabParallelGatherOp>(op)) {
      auto sum = embedded.hasOneUse()
                     ? dyn_cast<shard::AllReduceOp>(*embedded.user_begin())
                     : shard::AllReduceOp();
      if (!sum)
        return op.emitError("sequence parallelism: ")
               << nodeOf(&op) << " is a vocab-parallel lookup without its "
               << "all-reduce";
      if (failed(builder.absorb(sum, sum.getResult(), 1)))
        return failure();
    } else {
      // A replicated table: the users read their part of the lookup.
      for (Operation *user : embedded.getUsers())
        if (failed(builder.absorb(user, embedded, 1)))
          return failure();
    }
  }
  if (!seeded)
    return func.emitError("sequence parallelism: no token embedding (a "
                          "gather by a [batch, sequence] model input) to "
                          "find the sequence dimension from");
  if (failed(builder.grow()))
    return failure();
  // Op order, for a deterministic rewrite.
  SequenceParallelRegion &region = builder.region;
  SmallVector<Operation *> ordered(region.ops.begin(), region.ops.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  region.ops = llvm::SetVector<Operation *>(ordered.begin(), ordered.end());
  return std::move(region);
}
