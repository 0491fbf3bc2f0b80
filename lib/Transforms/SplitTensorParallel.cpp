//===- SplitTensorParallel.cpp - weft-split-tensor-parallel ---------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/TensorParallel.h"
#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_SPLITTENSORPARALLEL
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct SplitTensorParallelPass
    : weft::impl::SplitTensorParallelBase<SplitTensorParallelPass> {
  using SplitTensorParallelBase::SplitTensorParallelBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (fallback != "error" && fallback != "replicate") {
      func.emitError("weft-split-tensor-parallel: fallback='")
          << fallback << "': expected error or replicate";
      return signalPassFailure();
    }
    FailureOr<std::optional<DeviceMesh>> mesh =
        getDeviceMesh(func->getParentOfType<ModuleOp>());
    if (failed(mesh))
      return signalPassFailure();
    if (!*mesh || (*mesh)->sizeOf("tensor") == 1)
      return;
    parts = (*mesh)->sizeOf("tensor");
    axis = (*mesh)->axisIndex("tensor");

    FailureOr<TensorParallelSplit> split = analyzeTensorParallel(
        func, parts,
        fallback == "replicate" ? TensorParallelFallback::Replicate
                                : TensorParallelFallback::Error);
    if (failed(split))
      return signalPassFailure();
    for (auto &[op, reason] : split->replicated) {
      auto name = dyn_cast<NameLoc>(op->getLoc());
      op->emitWarning("tensor parallelism: replicating the block of '")
          << (name ? name.getName().str() : op->getName().getStringRef().str())
          << "': " << reason;
    }
    if (split->columnLinears.empty()) {
      // T ranks that all compute the whole model is not what was asked.
      if (fallback == "error") {
        func.emitError("tensor parallelism: no MLP or attention block to "
                       "split ")
            << parts << " ways (--tensor-parallel-fallback=replicate runs "
            << "the whole model on every tensor rank)";
        return signalPassFailure();
      }
      func.emitWarning("tensor parallelism: no MLP or attention block to "
                       "split; every tensor rank computes the whole model");
    }
    rewrite(func, *split);
  }

  RankedTensorType localType(Value v, Sharding s) const {
    auto type = cast<RankedTensorType>(v.getType());
    return RankedTensorType::get(localShape(type.getShape(), s, parts),
                                 type.getElementType());
  }

  void rewrite(func::FuncOp func, const TensorParallelSplit &split) {
    OpBuilder b(func.getContext());
    auto shardOf = [&](Value v) {
      auto it = split.shardings.find(v);
      return it == split.shardings.end() ? Sharding() : it->second;
    };
    // weft.shard = {dim, blocks}: a parameter's slice of its initializer,
    // a dropout's of the whole mask.
    auto shardAttr = [&](Sharding s) {
      return b.getDictionaryAttr(
          {b.getNamedAttr("dim", b.getI64IntegerAttr(s.dim)),
           b.getNamedAttr("blocks", b.getI64IntegerAttr(s.blocks))});
    };
    // Parameters: local types, and which slice of the initializer to load.
    for (BlockArgument arg : func.getArguments()) {
      Sharding s = shardOf(arg);
      if (!s.isSplit())
        continue;
      arg.setType(localType(arg, s));
      func.setArgAttr(arg.getArgNumber(), kShardAttr, shardAttr(s));
    }
    // Values: local types; attributes that restate a shape, local sizes.
    for (Operation &op : func.getBody().front()) {
      for (Value r : op.getResults())
        if (Sharding s = shardOf(r); s.isSplit())
          r.setType(localType(r, s));
      Sharding in =
          op.getNumOperands() ? shardOf(op.getOperand(0)) : Sharding();
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        reshape.setShape(reshape.getType().getShape());
      } else if (auto constant = dyn_cast<ConstantOp>(op);
                 constant && shardOf(constant.getResult()).isSplit()) {
        // A splat (TensorParallel.cpp's isLocalSplat): the same value in
        // the shard's shape.
        constant.setValueAttr(
            cast<DenseElementsAttr>(constant.getValueAttr())
                .resizeSplat(cast<ShapedType>(constant.getType())));
      } else if (auto expand = dyn_cast<ExpandOp>(op); expand && in.isSplit()) {
        expand.setShape(expand.getType().getShape());
      } else if (isa<DropoutOp, AttentionOp>(op) && in.isSplit()) {
        // Plan emission adds the rank's index. (An attention's dropout
        // mask has q's leading dims: the same dim is sharded.)
        op.setAttr(kShardAttr, shardAttr(in));
      } else if (auto cut = dyn_cast<SplitOp>(op); cut && in.isSplit()) {
        int64_t a = cut.getAxis();
        if (a < 0)
          a += cut.getInput().getType().getRank();
        SmallVector<int64_t> sizes;
        for (Value r : cut.getResults())
          sizes.push_back(cast<RankedTensorType>(r.getType()).getDimSize(a));
        cut.setSizes(sizes);
      } else if (auto slice = dyn_cast<SliceOp>(op); slice && in.isSplit()) {
        // The whole shard, or block i of it: [i w, (i + 1) w) locally.
        int64_t d = in.dim;
        int64_t width = slice.getType().getDimSize(d);
        int64_t fullWidth = width * parts;
        SmallVector<int64_t> starts(slice.getStarts()), ends(slice.getEnds());
        starts[d] = starts[d] / fullWidth * width;
        ends[d] = starts[d] + width;
        slice.setStarts(starts);
        slice.setEnds(ends);
      }
    }
    // f before every column-parallel linear, one per activation.
    llvm::DenseMap<Value, Value> entered;
    for (Operation *op : split.columnLinears) {
      Value x = op->getOperand(0);
      Value &f = entered[x];
      if (!f) {
        if (Operation *def = x.getDefiningOp())
          b.setInsertionPointAfter(def);
        else
          b.setInsertionPointToStart(&func.getBody().front());
        f = CopyToTensorParallelOp::create(
            b, x.getLoc(), x,
            FlatSymbolRefAttr::get(b.getContext(), kMeshSymbol),
            b.getDenseI16ArrayAttr({int16_t(axis)}));
      }
      op->setOperand(0, f);
    }
    // g after every row-parallel linear; a gemm's bias term beta C after g
    // (added on every rank before it, the sum would count it T times).
    for (Operation *op : split.rowLinears) {
      Value bias;
      if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getC()) {
        b.setInsertionPoint(gemm);
        bias = gemm.getC();
        if (double beta = gemm.getBeta().convertToDouble(); beta != 1.0) {
          Type element =
              cast<RankedTensorType>(bias.getType()).getElementType();
          auto scale = ConstantOp::create(
              b, gemm.getLoc(),
              DenseElementsAttr::get(RankedTensorType::get({}, element),
                                     b.getFloatAttr(element, beta)));
          bias = MulOp::create(b, gemm.getLoc(), bias, scale);
        }
        auto unbiased =
            GemmOp::create(b, gemm.getLoc(), gemm.getA(), gemm.getB(), Value(),
                           gemm.getAlphaAttr(), gemm.getBetaAttr(),
                           gemm.getTransAAttr(), gemm.getTransBAttr());
        unbiased->setDiscardableAttrs(gemm->getDiscardableAttrDictionary());
        gemm.replaceAllUsesWith(unbiased.getResult());
        gemm.erase();
        op = unbiased;
      }
      b.setInsertionPointAfter(op);
      Value partial = op->getResult(0);
      auto sum = allReduce(b, op->getLoc(), partial, shard::ReductionKind::Sum);
      partial.replaceAllUsesExcept(sum, sum);
      if (bias) {
        auto added = AddOp::create(b, op->getLoc(), sum, bias);
        sum.getResult().replaceAllUsesExcept(added, added);
      }
    }
    rewriteEntries(b, split);
    rewriteVocab(b, split);
    func.setType(FunctionType::get(func.getContext(),
                                   func.getBody().front().getArgumentTypes(),
                                   func.getResultTypes()));
  }

  /// Replicated activations read along a block's sharded dimension: each
  /// rank's part (shard.all_slice; its adjoint all-gathers the complete
  /// gradient). k and v with fewer heads than the attention's q are first
  /// repeated to q's heads, as Hugging Face's repeat_kv: query head h
  /// reads kv head h / (H / Hkv).
  void rewriteEntries(OpBuilder &b, const TensorParallelSplit &split) {
    auto grid = FlatSymbolRefAttr::get(b.getContext(), kMeshSymbol);
    auto axes = b.getDenseI16ArrayAttr({int16_t(axis)});
    for (const TensorParallelSplit::Entry &e : split.entries) {
      b.setInsertionPoint(e.op);
      Value v = e.op->getOperand(e.index);
      Location loc = v.getLoc();
      auto type = cast<RankedTensorType>(v.getType());
      if (auto attention = dyn_cast<AttentionOp>(e.op)) {
        // enter(): rank 4, [B, H, S, D], sharded by heads (dim 1).
        int64_t heads = attention.getQ().getType().getDimSize(1) * parts;
        int64_t kvHeads = type.getDimSize(1), group = heads / kvHeads;
        if (group > 1) {
          ArrayRef<int64_t> shape = type.getShape();
          SmallVector<int64_t> one{shape[0], kvHeads, 1, shape[2], shape[3]},
              many{shape[0], kvHeads, group, shape[2], shape[3]},
              merged{shape[0], heads, shape[2], shape[3]};
          v = ReshapeOp::create(b, loc, v, one);
          v = ExpandOp::create(b, loc, v, many);
          v = ReshapeOp::create(b, loc, v, merged);
        }
      }
      auto part =
          shard::AllSliceOp::create(b, loc, localType(v, e.sharding), grid,
                                    axes, v, b.getIndexAttr(e.sharding.dim));
      e.op->setOperand(e.index, part);
    }
  }

  shard::AllReduceOp allReduce(OpBuilder &b, Location loc, Value v,
                               shard::ReductionKind kind) const {
    return shard::AllReduceOp::create(
        b, loc, v, kMeshSymbol,
        ArrayRef<shard::GridAxis>{shard::GridAxis(axis)}, kind);
  }

  /// Lookups in a vocab table become masked gathers summed by g; losses
  /// over class-sharded scores the cross-entropy that all-reduces the row
  /// maxima, then the softmax denominators and target scores.
  void rewriteVocab(OpBuilder &b, const TensorParallelSplit &split) {
    auto grid = FlatSymbolRefAttr::get(b.getContext(), kMeshSymbol);
    auto axes = b.getDenseI16ArrayAttr({int16_t(axis)});
    for (Operation *op : split.vocabGathers) {
      auto gather = cast<GatherOp>(op);
      b.setInsertionPoint(gather);
      auto local = VocabParallelGatherOp::create(
          b, gather.getLoc(), gather.getType(), gather.getData(),
          gather.getIndices(), grid, axes);
      local->setDiscardableAttrs(gather->getDiscardableAttrDictionary());
      auto sum =
          allReduce(b, gather.getLoc(), local, shard::ReductionKind::Sum);
      gather.replaceAllUsesWith(sum.getResult());
      gather.erase();
    }
    for (Operation *op : split.vocabLosses) {
      auto loss = cast<SoftmaxCrossEntropyOp>(op);
      b.setInsertionPoint(loss);
      Location loc = loss.getLoc();
      Value scores = loss.getScores(), labels = loss.getLabels();
      auto type = cast<RankedTensorType>(scores.getType());
      int64_t n = type.getDimSize(0);
      auto rowMax =
          ReduceMaxOp::create(b, loc, scores, ArrayRef<int64_t>{1}, true);
      auto max = allReduce(b, loc, rowMax, shard::ReductionKind::Max);
      auto stats = VocabParallelCrossEntropyStatsOp::create(
          b, loc, RankedTensorType::get({n, 2}, type.getElementType()), scores,
          max, labels, grid, axes);
      auto sums = allReduce(b, loc, stats, shard::ReductionKind::Sum);
      auto vocab = VocabParallelCrossEntropyOp::create(
          b, loc, loss.getLoss().getType(), type, scores, max, sums, labels,
          grid, axes, loss.getIgnoreIndexAttr());
      loss.getLoss().replaceAllUsesWith(vocab.getLoss());
      loss.getLogProb().replaceAllUsesWith(vocab.getLogProb());
      loss.erase();
    }
  }

  int64_t parts = 1, axis = 0;
};

} // namespace
