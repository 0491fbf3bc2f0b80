//===- ShardedBucket.cpp - ZeRO's update of one gradient bucket -----------===//

#include "ShardedBucket.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/Transforms/FuncUtils.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace weft;

namespace {

/// The optimizer-state operands of an update and their names' suffixes.
SmallVector<std::pair<Value, StringRef>> stateOf(Operation *update) {
  if (auto adamw = dyn_cast<AdamWOp>(update))
    return {{adamw.getExpAvg(), "exp_avg"},
            {adamw.getExpAvgSq(), "exp_avg_sq"}};
  auto sgd = cast<SGDOp>(update);
  if (Value buffer = sgd.getMomentumBuffer())
    return {{buffer, "momentum_buffer"}};
  return {};
}

} // namespace

Operation *weft::firstUpdateAfter(ArrayRef<Operation *> members,
                                  Operation *collective) {
  SmallVector<Operation *> ordered(members.begin(), members.end());
  llvm::sort(ordered, [](Operation *a, Operation *c) {
    return a->isBeforeInBlock(c);
  });
  Operation *at = collective;
  for (Operation *update : ordered)
    if (update->isBeforeInBlock(collective)) {
      update->moveAfter(at);
      at = update;
    }
  return ordered.front();
}

void weft::shardBucket(func::FuncOp func, ArrayRef<Operation *> members,
                       Operation *ready, int64_t bucket, DataAxis data) {
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  Location loc = members.front()->getLoc();
  SmallVector<Value> grads, params;
  SmallVector<int64_t> sizes;
  int64_t n = 0;
  for (Operation *update : members) {
    params.push_back(update->getOperand(0));
    grads.push_back(update->getOperand(1));
    sizes.push_back(numElements(update->getOperand(0).getType()));
    n += sizes.back();
  }
  Type element = cast<ShapedType>(params[0].getType()).getElementType();
  // The flat split: s elements per replica, the last padded with zeros.
  int64_t shard = (n + data.replicas - 1) / data.replicas;
  int64_t padded = shard * data.replicas;
  auto flatType = [&](int64_t k) {
    return RankedTensorType::get({k}, element);
  };
  auto grid = FlatSymbolRefAttr::get(ctx, kMeshSymbol);
  auto axes = b.getDenseI16ArrayAttr({int16_t(data.axis)});
  Operation *placement = nullptr;
  auto place = [&](Operation *op) {
    for (StringRef name : {kPhaseAttr, kMicroBatchAttr, kStageAttr})
      if (Attribute attr = placement->getAttr(name))
        op->setAttr(name, attr);
    return op->getResult(0);
  };
  // `values` flattened, concatenated and padded to `padded` elements.
  auto flatten = [&](ArrayRef<Value> values) {
    SmallVector<Value> pieces;
    for (auto [v, size] : llvm::zip(values, sizes))
      pieces.push_back(place(ReshapeOp::create(b, loc, v, {size})));
    if (padded > n)
      pieces.push_back(ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(flatType(padded - n),
                                 b.getFloatAttr(element, 0.0))));
    return pieces.size() == 1
               ? pieces[0]
               : place(ConcatOp::create(b, loc, pieces, 0));
  };

  // The gradients' sum, this replica's shard of it: once they exist.
  placement = ready ? ready : members.front();
  if (ready)
    b.setInsertionPointAfter(ready);
  else
    b.setInsertionPoint(members.front());
  auto scattered = shard::ReduceScatterOp::create(
      b, loc, flatType(shard), grid, axes, flatten(grads),
      shard::ReductionKindAttr::get(ctx, shard::ReductionKind::Sum),
      b.getIndexAttr(0));
  place(scattered);
  scattered->setAttr(kBucketAttr, b.getI64IntegerAttr(bucket));

  // The update of this replica's shard, with the updates.
  Operation *first = firstUpdateAfter(members, scattered);
  placement = first;
  b.setInsertionPoint(first);
  auto inverse = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(RankedTensorType::get({}, element),
                             b.getFloatAttr(element, 1.0 / data.replicas)));
  Value grad = place(MulOp::create(b, loc, scattered.getResult(), inverse));
  Value param = place(shard::AllSliceOp::create(
      b, loc, flatType(shard), grid, axes, flatten(params), b.getIndexAttr(0)));
  SmallVector<Value> state;
  SmallVector<DictionaryAttr> stateAttrs;
  for (auto [old, suffix] : stateOf(first)) {
    std::string name =
        "zero.bucket" + std::to_string(bucket) + "." + suffix.str();
    unsigned index = func.getNumArguments();
    auto attrs = b.getDictionaryAttr(
        b.getNamedAttr(kOptimizerStateAttr, b.getStringAttr(name)));
    (void)func.insertArgument(index, flatType(shard), attrs, loc);
    state.push_back(func.getArgument(index));
    stateAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(kUpdateAttr, b.getStringAttr(name))));
  }
  Operation *update;
  if (auto adamw = dyn_cast<AdamWOp>(first)) {
    Type t = flatType(shard);
    update = AdamWOp::create(b, loc, t, t, t, param, grad, state[0], state[1],
                             adamw.getLrAttr(), adamw.getBeta1Attr(),
                             adamw.getBeta2Attr(), adamw.getEpsAttr(),
                             adamw.getWeightDecayAttr());
  } else {
    auto sgd = cast<SGDOp>(first);
    SmallVector<Type> types(1 + state.size(), flatType(shard));
    update = SGDOp::create(b, loc, types, param, grad,
                           state.empty() ? Value() : state[0],
                           sgd.getLrAttr(), sgd.getMomentumAttr(),
                           sgd.getWeightDecayAttr(), sgd.getNesterovAttr());
  }
  place(update);

  // Every replica's updated shard, back into the parameters.
  auto gathered = shard::AllGatherOp::create(
      b, loc, flatType(padded), grid, axes, update->getResult(0),
      b.getIndexAttr(0));
  gathered->setAttr(kBucketAttr, b.getI64IntegerAttr(bucket));
  Value whole = place(gathered);
  if (padded > n)
    whole = place(SliceOp::create(b, loc, whole, {0}, {n}, {1}));
  SmallVector<Value> parts{whole};
  if (members.size() > 1) {
    auto split = SplitOp::create(b, loc, whole, 0, sizes);
    place(split);
    parts.assign(split->getResults().begin(), split->getResults().end());
  }
  llvm::DenseMap<Value, Value> newValue; // an old update's result -> its own
  llvm::DenseSet<Value> dropped;         // the old state's updated values
  for (auto [old, part, p] : llvm::zip(members, parts, params)) {
    auto shape = cast<RankedTensorType>(p.getType()).getShape();
    Value value = place(ReshapeOp::create(b, loc, part, shape));
    newValue[old->getResult(0)] = place(AssignOp::create(b, loc, p, value));
    for (Value r : old->getResults().drop_front())
      dropped.insert(r);
  }

  // The return: parameters from the assigns, the old state's updates
  // replaced by the new state's.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (dropped.contains(v))
      continue;
    results.push_back(newValue.lookup(v) ? newValue.lookup(v) : v);
    resultAttrs.push_back(func.getResultAttrDict(i));
  }
  for (auto [v, attrs] : llvm::zip(update->getResults().drop_front(),
                                   stateAttrs)) {
    results.push_back(v);
    resultAttrs.push_back(attrs);
  }
  replaceReturn(func, results, resultAttrs);

  // The members are gone, and their state arguments once no update reads
  // them (a tied parameter's copy on another stage may, until its own
  // bucket is sharded).
  SmallVector<BlockArgument> oldState;
  for (Operation *old : members) {
    for (auto [v, suffix] : stateOf(old))
      oldState.push_back(cast<BlockArgument>(v));
    old->erase();
  }
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : oldState)
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  (void)func.eraseArguments(unused);
}
