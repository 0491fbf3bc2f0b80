//===- AccumulateMicrobatches.cpp - weft-accumulate-microbatches ----------===//

#include "weft/Transforms/Passes.h"

#include "AttributeSets.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace weft {
#define GEN_PASS_DEF_ACCUMULATEMICROBATCHES
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct AccumulateMicrobatchesPass
    : weft::impl::AccumulateMicrobatchesBase<AccumulateMicrobatchesPass> {
  using AccumulateMicrobatchesBase::AccumulateMicrobatchesBase;

  void runOnOperation() override {
    if (microbatches < 1) {
      getOperation().emitError("microbatches must be at least 1");
      return signalPassFailure();
    }
    // weft-autodiff's seed of 1/M: the gradients need only be summed.
    func::FuncOp func = getOperation();
    bool seeded = false;
    if (auto seed = func->getAttrOfType<IntegerAttr>(kSeedMicrobatchesAttr)) {
      if (seed.getInt() != microbatches) {
        func.emitError("weft-accumulate-microbatches: weft-autodiff seeded "
                       "the backward for ")
            << seed.getInt() << " micro-batches, not " << int64_t(microbatches);
        return signalPassFailure();
      }
      seeded = true;
      func->removeAttr(kSeedMicrobatchesAttr);
    }
    if (microbatches > 1 && failed(accumulate(func, seeded)))
      signalPassFailure();
  }

  /// Whether an op writes `v`'s bytes in place, through views of it too.
  static bool writtenInPlace(Value v) {
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      for (OpResult result : user->getResults()) {
        if (aliasedOperand(user, result.getResultNumber()) !=
            use.getOperandNumber())
          continue;
        if (!isView(user) || writtenInPlace(result))
          return true;
      }
    }
    return false;
  }

  /// The terms a micro-batch's gradient `v` sums: a parameter used more
  /// than once (a tied embedding and head) gets a term per use, which
  /// weft-autodiff adds per micro-batch. Summed so, a pipeline would send
  /// the last stage's term to the first every micro-batch (a vocab x hidden
  /// transfer each, and under a zero-bubble schedule the first stage's W(i)
  /// waiting for the last stage's, P-1 micro-batches later). Each term is
  /// summed over the micro-batches instead, on its own stage, and the
  /// totals added once: Megatron-LM's embedding-group all-reduce, once per
  /// step. Done on every layout, so that one rank sums in the same order as
  /// a pipeline. The adds so split go into `split`.
  static SmallVector<Value> useTerms(Value v,
                                     SmallPtrSetImpl<Operation *> &split) {
    auto add = v.getDefiningOp<AddOp>();
    if (!add || !add->hasOneUse())
      return {v};
    split.insert(add);
    SmallVector<Value> terms = useTerms(add.getLhs(), split);
    llvm::append_range(terms, useTerms(add.getRhs(), split));
    return terms;
  }

  /// `seeded`: each micro-batch's gradients are its 1/M share already.
  LogicalResult accumulate(func::FuncOp func, bool seeded) {
    MLIRContext *ctx = func.getContext();
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    int64_t m = microbatches;
    SmallVector<Type> resultTypes(ret.getOperandTypes());

    // Inputs grow M-fold in dim 0; the body is cloned once per micro-batch
    // into a new block, the original becomes micro-batch 0's template.
    SmallVector<Type> argTypes;
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      if (func.getArgAttr(arg.getArgNumber(), kInputAttr)) {
        if (type.getRank() == 0)
          return func.emitError("input ") << arg.getArgNumber()
                                          << " is a scalar: it has no batch "
                                             "dim to split into micro-batches";
        SmallVector<int64_t> shape(type.getShape());
        shape[0] *= m;
        type = RankedTensorType::get(shape, type.getElementType());
      }
      argTypes.push_back(type);
    }
    Block *newBody = new Block();
    for (auto [type, arg] : llvm::zip(argTypes, func.getArguments()))
      newBody->addArgument(type, arg.getLoc());
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(newBody);

    // Constants no op writes are made once, before every micro-batch, and
    // shared: M copies would cost M times their arena bytes and plan text
    // (a causal mask of a 2048-token GPT is 4 MiB). One belongs to no
    // micro-batch's phase: a backward seed is not its first backward op.
    IRMapping shared;
    for (Operation &op : body.without_terminator())
      if (isa<ConstantOp>(op) && !writtenInPlace(op.getResult(0)))
        setTaskKind(b.clone(op, shared), TaskKind::Forward);

    // Per result, its terms (useTerms, for a gradient), each summed over
    // the micro-batches.
    SmallPtrSet<Operation *, 4> split;
    SmallVector<SmallVector<Value>> termsOf;
    for (auto [i, v] : llvm::enumerate(ret.getOperands()))
      termsOf.push_back(func.getResultAttr(i, kGradAttr)
                            ? useTerms(v, split)
                            : SmallVector<Value>{v});

    // Each copy is tagged with its micro-batch: few distinct attribute
    // sets over millions of copies.
    AttributeSets tags(ctx);
    SmallVector<SmallVector<Value>> totals;
    for (const SmallVector<Value> &terms : termsOf)
      totals.emplace_back(terms.size());
    // Batch-norm running statistics chain from one micro-batch to the next.
    llvm::DenseMap<Value, Value> stateNow;
    for (int64_t k = 0; k < m; ++k) {
      IRMapping map = shared;
      for (auto [oldArg, newArg] :
           llvm::zip(func.getArguments(), newBody->getArguments())) {
        if (!func.getArgAttr(oldArg.getArgNumber(), kInputAttr)) {
          Value current = stateNow.lookup(oldArg);
          map.map(oldArg, current ? current : Value(newArg));
          continue;
        }
        // Micro-batch k: rows [k * mb, (k + 1) * mb) of the global input.
        auto type = cast<RankedTensorType>(oldArg.getType());
        SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape()),
            steps(type.getRank(), 1);
        starts[0] = k * type.getDimSize(0);
        ends[0] = starts[0] + type.getDimSize(0);
        auto slice =
            SliceOp::create(b, oldArg.getLoc(), newArg, starts, ends, steps);
        TaskFields task = TaskFields::of(slice);
        task.microBatch = k;
        setTask(slice, task);
        map.map(oldArg, slice);
      }
      for (Operation &op : body.without_terminator()) {
        if (shared.contains(&op) || split.contains(&op))
          continue;
        Operation *copy = b.clone(op, map);
        tags.setTaskField(copy, AttributeSets::TaskField::MicroBatch, k);
        if (auto bn = dyn_cast<BatchNormOp>(copy); bn && bn.getTraining())
          for (unsigned r : {1u, 2u}) {
            Value stateArg = op.getOperand(r + 2);
            if (isa<BlockArgument>(stateArg))
              stateNow[stateArg] = bn->getResult(r);
          }
      }
      for (auto [terms, sums] : llvm::zip(termsOf, totals))
        for (auto [term, total] : llvm::zip(terms, sums)) {
          Value mapped = map.lookup(term);
          if (!total) {
            total = mapped;
            continue;
          }
          // Into the running sum's bytes where nothing else reads them: one
          // sum buffer for every micro-batch, which the plan's
          // task bodies need (their instructions name the same buffers).
          auto add = AddOp::create(b, ret.getLoc(), total, mapped);
          accumulateInPlaceIfOwned(add);
          total = add;
        }
    }
    // A split sum's totals added once, where (the stage) it added its
    // terms.
    SmallVector<Value> summed;
    for (auto [v, sums] : llvm::zip(ret.getOperands(), totals)) {
      Value total = sums.front();
      for (Value next : llvm::drop_begin(sums)) {
        auto add = AddOp::create(b, ret.getLoc(), total, next);
        TaskFields task = TaskFields::of(v.getDefiningOp());
        task.microBatch.reset();
        setTask(add, task);
        total = add;
      }
      summed.push_back(total);
    }
    // Scale the sums by 1/M: the loss is the sum of 1/M-scaled micro-batch
    // losses, and the gradients are its gradients (scaled already when
    // the backward was seeded with 1/M).
    SmallVector<Value> results;
    for (auto [i, total] : llvm::enumerate(summed)) {
      if (seeded && func.getResultAttr(i, kGradAttr)) {
        results.push_back(total);
        continue;
      }
      auto type = cast<RankedTensorType>(total.getType());
      auto scale = ConstantOp::create(
          b, ret.getLoc(),
          DenseElementsAttr::get(
              RankedTensorType::get({}, type.getElementType()),
              b.getFloatAttr(type.getElementType(), 1.0 / m)));
      results.push_back(MulOp::create(b, ret.getLoc(), total, scale));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);

    // Swap in the new body.
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    func.getAllArgAttrs(argAttrs);
    func.getAllResultAttrs(resultAttrs);
    func.getBody().push_back(newBody);
    body.dropAllDefinedValueUses();
    body.erase();
    func.setType(FunctionType::get(ctx, argTypes, resultTypes));
    func.setAllArgAttrs(argAttrs);
    func.setAllResultAttrs(resultAttrs);
    return success();
  }
};

} // namespace
