//===- ShardedBucket.cpp - ZeRO's update of one gradient bucket -----------===//

#include "ShardedBucket.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/Transforms/FuncUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace weft;

namespace {

/// A bucket tensor's geometry under the flat split.
struct Piece {
  SmallVector<int64_t> shape; ///< the whole (rank-local) tensor's
  int64_t n = 0;              ///< its elements
  int64_t s = 0;              ///< a replica's shard: ceil(n / D)

  /// The split of a tensor of `shape` into `pieces`.
  static Piece of(ArrayRef<int64_t> shape, int64_t pieces) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return {SmallVector<int64_t>(shape), n, (n + pieces - 1) / pieces};
  }
};

/// The ops reading `param` but its updates (on pipeline stage `stage`,
/// when given), in block order.
SmallVector<Operation *> readersOf(BlockArgument param,
                                   std::optional<int64_t> stage = {}) {
  llvm::SetVector<Operation *> users;
  for (Operation *user : param.getUsers())
    if (!isa<SGDOp, AdamWOp>(user) &&
        (!stage || stageOf(user).value_or(0) == *stage))
      users.insert(user);
  SmallVector<Operation *> ordered(users.begin(), users.end());
  llvm::sort(ordered, [](Operation *a, Operation *c) {
    return a->isBeforeInBlock(c);
  });
  return ordered;
}

/// Makes argument `param` its flat piece: type [s], `weft.flat_shard` =
/// the whole shape (the function type follows with syncFunctionType).
void makePiece(func::FuncOp func, BlockArgument param, const Piece &p) {
  param.setType(RankedTensorType::get(
      {p.s}, cast<ShapedType>(param.getType()).getElementType()));
  func.setArgAttr(param.getArgNumber(), kFlatShardAttr,
                  DenseI64ArrayAttr::get(func.getContext(), p.shape));
}

void syncFunctionType(func::FuncOp func) {
  func.setType(FunctionType::get(func.getContext(),
                                 func.getBody().getArgumentTypes(),
                                 func.getResultTypes()));
}

/// Builds the rewrite's ops, each joining the task and stage of the op it
/// is placed with.
struct ShardBuilder {
  ShardBuilder(MLIRContext *ctx, Location loc, DataAxis data, Type element)
      : b(ctx), loc(loc), data(data), element(element),
        grid(FlatSymbolRefAttr::get(ctx, data.grid)),
        axes(b.getDenseI16ArrayAttr({int16_t(data.shardAxis)})) {}

  /// Insert before `op` (or after it) and place new ops in its task.
  void before(Operation *op) {
    b.setInsertionPoint(op);
    placement = op;
  }
  void after(Operation *op) {
    b.setInsertionPointAfter(op);
    placement = op;
  }

  Value place(Operation *op) {
    joinTask(op, placement);
    return op->getResult(0);
  }

  RankedTensorType type(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, element);
  }
  Value reshape(Value v, ArrayRef<int64_t> shape) {
    if (cast<ShapedType>(v.getType()).getShape() == shape)
      return v;
    return place(ReshapeOp::create(b, loc, v, shape));
  }
  Value concat(ArrayRef<Value> pieces, int64_t axis) {
    return pieces.size() == 1 ? pieces[0]
                              : place(ConcatOp::create(b, loc, pieces, axis));
  }
  SmallVector<Value> split(Value v, int64_t axis, ArrayRef<int64_t> sizes) {
    if (sizes.size() == 1)
      return {v};
    auto op = SplitOp::create(b, loc, v, axis, sizes);
    place(op);
    return SmallVector<Value>(op->getResults());
  }
  Value scalar(double value) {
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(type({}), b.getFloatAttr(element, value)));
  }

  /// `v`, `p`'s tensor, flattened and zero-padded to D s elements; as it
  /// is when that needs no padding.
  Value padded(Value v, const Piece &p) {
    if (data.pieces * p.s == p.n)
      return v;
    Value flat = reshape(v, {p.n});
    Value zeros = ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(type({data.pieces * p.s - p.n}),
                               b.getFloatAttr(element, 0.0)));
    return concat({flat, zeros}, 0);
  }
  /// `p`'s tensor from `v`, its D s elements (of any shape): the first n,
  /// reshaped to its shape.
  Value unpadded(Value v, const Piece &p) {
    if (data.pieces * p.s != p.n)
      v = place(SliceOp::create(b, loc, reshape(v, {data.pieces * p.s}),
                                {0}, {p.n}, {1}));
    return reshape(v, p.shape);
  }

  OpBuilder b;
  Location loc;
  DataAxis data;
  Type element;
  FlatSymbolRefAttr grid;
  DenseI16ArrayAttr axes;
  Operation *placement = nullptr;
};

} // namespace

Operation *weft::latestDef(ValueRange values) {
  Operation *latest = nullptr;
  for (Value v : values) {
    Operation *def = v.getDefiningOp();
    if (!def || isa<ConstantOp>(def))
      continue;
    if (!latest || latest->isBeforeInBlock(def))
      latest = def;
  }
  return latest;
}

Operation *weft::firstUpdateAfter(ArrayRef<Operation *> members,
                                  Operation *collective) {
  // Found walking up from the block's end, without asking the block's
  // order: each bucket's ops invalidate it, and a step of thousands of
  // buckets would renumber the block for each. The updates sit at the end
  // and the collective is posted late in the backward, so the walk is
  // short.
  llvm::SmallPtrSet<Operation *, 16> wanted(members.begin(), members.end());
  SmallVector<Operation *> after, early; // last first
  bool passed = false;
  for (Operation *op = &collective->getBlock()->back(); op && !wanted.empty();
       op = op->getPrevNode()) {
    if (op == collective)
      passed = true;
    else if (wanted.erase(op))
      (passed ? early : after).push_back(op);
  }
  std::reverse(after.begin(), after.end());
  std::reverse(early.begin(), early.end());
  Operation *at = collective;
  for (Operation *update : early) {
    update->moveAfter(at);
    at = update;
  }
  return early.empty() ? after.front() : early.front();
}

void weft::shardParameter(func::FuncOp func, BlockArgument param,
                          DataAxis data) {
  if (func.getArgAttr(param.getArgNumber(), kFlatShardAttr))
    return;
  auto whole = cast<RankedTensorType>(param.getType());
  Piece p = Piece::of(whole.getShape(), data.pieces);
  ShardBuilder build(func.getContext(), param.getLoc(), data,
                     whole.getElementType());
  for (Operation *user : readersOf(param)) {
    build.before(user);
    auto gather = shard::AllGatherOp::create(
        build.b, build.loc, build.type({data.pieces * p.s}), build.grid,
        build.axes, param, build.b.getIndexAttr(0));
    user->replaceUsesOfWith(param, build.unpadded(build.place(gather), p));
  }
  makePiece(func, param, p);
  syncFunctionType(func);
}

void weft::prefetchParameters(func::FuncOp func, ArrayRef<BlockArgument> params,
                              int64_t stage, int64_t bucket, DataAxis data,
                              Operation *&at) {
  auto element = cast<ShapedType>(params.front().getType()).getElementType();
  ShardBuilder build(func.getContext(), params.front().getLoc(), data,
                     element);
  // Each parameter's readers on this stage, then its argument the piece. A
  // tied parameter read on two stages is gathered by each stage's bucket,
  // the argument made a piece by the first.
  SmallVector<Piece> pieces;
  SmallVector<SmallVector<Operation *>> readers;
  int64_t total = 0;
  for (BlockArgument param : params) {
    auto shape = func.getArgAttrOfType<DenseI64ArrayAttr>(
        param.getArgNumber(), kFlatShardAttr);
    pieces.push_back(Piece::of(
        shape ? shape.asArrayRef()
              : cast<RankedTensorType>(param.getType()).getShape(),
        data.pieces));
    total += pieces.back().s;
    readers.push_back(readersOf(param, stage));
    makePiece(func, param, pieces.back());
  }
  syncFunctionType(func);
  // The gather, posted where the stage's forward starts (or, when no op
  // was found there, before these parameters' first reader; with none,
  // nothing needs the whole parameters).
  for (ArrayRef<Operation *> users : readers)
    if (!users.empty() && (!at || users.front()->isBeforeInBlock(at)))
      at = users.front();
  if (!at)
    return;
  build.before(at);
  SmallVector<Value> rows;
  for (auto [param, p] : llvm::zip(params, pieces))
    rows.push_back(build.reshape(param, {1, p.s}));
  Operation *start = rows.front().getDefiningOp();
  auto gather = shard::AllGatherOp::create(
      build.b, build.loc, build.type({data.pieces, total}), build.grid,
      build.axes, build.concat(rows, 1), build.b.getIndexAttr(0));
  gather->setAttr(kBucketAttr, build.b.getI64IntegerAttr(bucket));
  Value gathered = build.place(gather);
  at = start;
  // Each parameter's column, before its first reader.
  int64_t offset = 0;
  for (auto [param, p, users] : llvm::zip(params, pieces, readers)) {
    if (!users.empty()) {
      build.before(users.front());
      Value whole = build.unpadded(
          build.place(SliceOp::create(build.b, build.loc, gathered,
                                      {0, offset},
                                      {data.pieces, offset + p.s}, {1, 1})),
          p);
      for (Operation *user : users)
        user->replaceUsesOfWith(param, whole);
    }
    offset += p.s;
  }
}

void weft::shardBucket(func::FuncOp func, ArrayRef<BucketMember> members,
                       Operation *ready, int64_t bucket, int64_t stage,
                       DataAxis data, Prefetch &prefetch) {
  MLIRContext *ctx = func.getContext();
  Operation *front = members.front().update;
  Type element =
      cast<ShapedType>(front->getOperand(1).getType()).getElementType();
  ShardBuilder build(ctx, front->getLoc(), data, element);
  OpBuilder &b = build.b;
  // The gradients have the whole parameters' shapes (a stage-3 parameter
  // argument may already be a shard).
  SmallVector<Piece> pieces;
  SmallVector<int64_t> shards;
  SmallVector<Operation *> updates;
  for (const BucketMember &m : members) {
    auto type = cast<RankedTensorType>(m.update->getOperand(1).getType());
    pieces.push_back(Piece::of(type.getShape(), data.pieces));
    shards.push_back(pieces.back().s);
    updates.push_back(m.update);
  }
  int64_t total = 0;
  for (int64_t s : shards)
    total += s;

  // One reduce-scatter of `grads` (one per member) after `after`: the
  // bucket as [D, S], this replica's row [1, S] of the sum.
  auto scatter = [&](ArrayRef<Value> grads, Operation *after) {
    if (after)
      build.after(after);
    else
      build.before(front);
    SmallVector<Value> rows;
    for (auto [g, p] : llvm::zip(grads, pieces))
      rows.push_back(build.reshape(build.padded(g, p), {data.pieces, p.s}));
    auto op = shard::ReduceScatterOp::create(
        b, build.loc, build.type({1, total}), build.grid, build.axes,
        build.concat(rows, 1),
        shard::ReductionKindAttr::get(ctx, shard::ReductionKind::Sum),
        b.getIndexAttr(0));
    op->setAttr(kBucketAttr, b.getI64IntegerAttr(bucket));
    build.place(op);
    if (data.replicaAxis < 0)
      return op.getOperation();
    // Groups smaller than the data axis: the group's pieces summed over
    // the groups (the ranks holding the same piece).
    auto sum = shard::AllReduceOp::create(
        b, build.loc, op.getResult(), data.grid,
        ArrayRef<shard::GridAxis>{shard::GridAxis(data.replicaAxis)},
        shard::ReductionKind::Sum);
    sum->setAttr(kBucketAttr, b.getI64IntegerAttr(bucket));
    build.place(sum);
    return sum.getOperation();
  };

  // The shard of the gradients' sum over the replicas (and micro-batches).
  size_t microBatches = members.front().microBatchGrads.size();
  bool perMicroBatch = stage >= 2 && microBatches > 1;
  for (const BucketMember &m : members)
    perMicroBatch &= m.microBatchGrads.size() == microBatches &&
                     m.scaledAfterSum == members.front().scaledAfterSum;
  // Each micro-batch's shard is added to the running sum once the next
  // micro-batch's reduce-scatter is posted: it has the rest of its
  // backward and the next one's to complete in.
  Value sum, previous;
  Operation *last = nullptr;
  auto post = [&](ArrayRef<Value> grads, Operation *after) {
    last = scatter(grads, after);
    if (previous && !sum) {
      sum = previous;
    } else if (previous) {
      build.after(last);
      auto add = AddOp::create(b, build.loc, sum, previous);
      accumulateInPlaceIfOwned(add);
      sum = build.place(add);
    }
    previous = last->getResult(0);
  };
  if (perMicroBatch) {
    for (size_t k = 0; k < microBatches; ++k) {
      SmallVector<Value> grads;
      for (const BucketMember &m : members)
        grads.push_back(m.microBatchGrads[k]);
      post(grads, latestDef(grads));
    }
  } else {
    SmallVector<Value> grads;
    for (Operation *update : updates)
      grads.push_back(update->getOperand(1));
    post(grads, ready);
  }

  // The update of this replica's shards, with the updates.
  Operation *first = firstUpdateAfter(updates, last);
  build.before(first);
  Value grad = previous;
  if (sum) {
    auto add = AddOp::create(b, build.loc, sum, previous);
    accumulateInPlaceIfOwned(add);
    grad = build.place(add);
  }
  double scale = (data.seeded ? 1.0 : 1.0 / data.replicas) *
                 (perMicroBatch && members.front().scaledAfterSum
                      ? 1.0 / double(microBatches)
                      : 1.0);
  if (scale != 1.0)
    grad = build.place(MulOp::create(b, build.loc, grad, build.scalar(scale)));
  SmallVector<Value> gradShards = build.split(grad, 1, shards);

  // MindSpore's schedule: the parameters are pieces, gathered at the start.
  bool piecesBetweenSteps = stage >= 3 || prefetch.enabled;
  if (stage < 3 && prefetch.enabled) {
    SmallVector<BlockArgument> params;
    for (Operation *update : updates)
      params.push_back(cast<BlockArgument>(update->getOperand(0)));
    int64_t stageIndex = stageOf(front).value_or(0);
    prefetchParameters(func, params, stageIndex, bucket, data,
                       prefetch.at[stageIndex]);
    build.before(first);
  }

  llvm::DenseMap<Value, Value> newValue; // an old update's result -> its own
  SmallVector<Value> newShards;
  SmallVector<BlockArgument> oldState;
  for (auto [update, p, gradShard] : llvm::zip(updates, pieces, gradShards)) {
    Value param = update->getOperand(0);
    Value paramShard;
    if (stage >= 3) {
      shardParameter(func, cast<BlockArgument>(param), data);
      paramShard = param;
    } else if (prefetch.enabled) {
      paramShard = param;
    } else {
      paramShard = build.place(shard::AllSliceOp::create(
          b, build.loc, build.type({p.s}), build.grid, build.axes,
          build.reshape(build.padded(param, p), {data.pieces * p.s}),
          b.getIndexAttr(0)));
    }
    Value g = build.reshape(gradShard, {p.s});
    // The state keeps its name and element type (f32 beside a 16-bit
    // parameter); its argument becomes the shard.
    SmallVector<Value> state;
    SmallVector<Type> types{build.type({p.s})};
    for (auto [old, result] : optimizerState(update)) {
      auto arg = cast<BlockArgument>(old);
      oldState.push_back(arg);
      auto attrs = func.getArgAttrDict(arg.getArgNumber());
      NamedAttrList list(attrs);
      list.set(kFlatShardAttr, b.getDenseI64ArrayAttr(p.shape));
      unsigned index = func.getNumArguments();
      Type type = cast<RankedTensorType>(arg.getType()).clone({p.s});
      (void)func.insertArgument(index, type, list.getDictionary(ctx),
                                arg.getLoc());
      state.push_back(func.getArgument(index));
      types.push_back(type);
    }
    Operation *sharded;
    if (auto adamw = dyn_cast<AdamWOp>(update)) {
      Value master = adamw.getMaster() ? state[2] : Value();
      sharded = AdamWOp::create(
          b, build.loc, types[0], types[1], types[2],
          master ? types[3] : Type(), paramShard, g, state[0], state[1],
          master, adamw.getScaler(), adamw.getFoundInf(), adamw.getLrAttr(),
          adamw.getBeta1Attr(),
          adamw.getBeta2Attr(), adamw.getEpsAttr(),
          adamw.getWeightDecayAttr());
    } else {
      auto sgd = cast<SGDOp>(update);
      Value buffer = sgd.getMomentumBuffer() ? state.front() : Value();
      Value master = sgd.getMaster() ? state.back() : Value();
      sharded = SGDOp::create(b, build.loc, types, paramShard, g, buffer,
                              master, sgd.getScaler(), sgd.getFoundInf(),
                              sgd.getLrAttr(), sgd.getMomentumAttr(),
                              sgd.getWeightDecayAttr(), sgd.getNesterovAttr());
    }
    build.place(sharded);
    sharded->setAttr(kFlatShardAttr, b.getDenseI64ArrayAttr(p.shape));
    sharded->setAttr(kZeroStageAttr, b.getI64IntegerAttr(stage));
    for (auto [old, now] : llvm::zip(update->getResults().drop_front(),
                                     sharded->getResults().drop_front()))
      newValue[old] = now;
    newValue[update->getResult(0)] = sharded->getResult(0);
    newShards.push_back(sharded->getResult(0));
  }

  // Stages 1 and 2: every replica's updated shards, back into the whole
  // parameters.
  if (!piecesBetweenSteps) {
    SmallVector<Value> rows;
    for (auto [v, p] : llvm::zip(newShards, pieces))
      rows.push_back(build.reshape(v, {1, p.s}));
    auto gathered = shard::AllGatherOp::create(
        b, build.loc, build.type({data.pieces, total}), build.grid,
        build.axes, build.concat(rows, 1), b.getIndexAttr(0));
    gathered->setAttr(kBucketAttr, b.getI64IntegerAttr(bucket));
    SmallVector<Value> columns =
        build.split(build.place(gathered), 1, shards);
    for (auto [update, p, column] : llvm::zip(updates, pieces, columns)) {
      Value whole = build.unpadded(column, p);
      Value param = update->getOperand(0);
      newValue[update->getResult(0)] =
          build.place(AssignOp::create(b, build.loc, param, whole));
    }
  }

  // The return reads the new values; the old updates and the state
  // arguments no update reads any more are gone.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    results.push_back(newValue.lookup(v) ? newValue.lookup(v) : v);
    resultAttrs.push_back(func.getResultAttrDict(i));
  }
  replaceReturn(func, results, resultAttrs);
  for (Operation *update : updates)
    update->erase();
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : oldState)
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  (void)func.eraseArguments(unused);
}
