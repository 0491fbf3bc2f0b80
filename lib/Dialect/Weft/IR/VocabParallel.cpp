//===- VocabParallel.cpp - vocab-parallel embedding and cross-entropy -----===//
//
// Verifiers, costs and gradients of the ops in WeftParallelOps.td's vocab
// section (Megatron-LM: VocabParallelEmbedding, vocab_parallel_cross_entropy;
// Shoeybi et al. 2019, Section 3).
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "GradientUtils.h"

using namespace mlir;
using namespace weft;

namespace {
RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }
} // namespace

LogicalResult VocabParallelGatherOp::verify() {
  SmallVector<int64_t> shape(typeOf(getIndices()).getShape());
  llvm::append_range(shape, typeOf(getTable()).getShape().drop_front());
  if (typeOf(getOutput()).getShape() != ArrayRef<int64_t>(shape))
    return emitOpError("result must be the indices' shape then the table "
                       "row's");
  return success();
}

int64_t VocabParallelGatherOp::getBytesRead() {
  return byteSize(getIndices().getType()) + byteSize(getOutput().getType());
}

LogicalResult
VocabParallelGatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  if (grad::prepare(*this, dys, dxs))
    dxs[0] = VocabParallelGatherGradOp::create(
        b, getLoc(), getTable().getType(),
        grad::maskPaddingRows(b, *this, dys[0], getIndices()), getIndices(),
        /*accumulate=*/Value(), getGridAttr(), getGridAxesAttr());
  return success();
}

LogicalResult VocabParallelGatherGradOp::verify() {
  if (Value sum = getAccumulate(); sum && sum.getType() != getType())
    return emitOpError("accumulates into ")
           << sum.getType() << ", not its result's type " << getType();
  return success();
}

int64_t VocabParallelGatherGradOp::getFlops() {
  // The accumulate's add counts as the add op it replaced did.
  int64_t flops = numElements(getGrad().getType());
  return getAccumulate() ? flops + numElements(getType()) : flops;
}

LogicalResult VocabParallelCrossEntropyStatsOp::verify() {
  ArrayRef<int64_t> scores = typeOf(getScores()).getShape();
  if (scores.size() != 2 ||
      typeOf(getMax()).getShape() != ArrayRef<int64_t>{scores[0], 1} ||
      typeOf(getLabels()).getShape() != ArrayRef<int64_t>{scores[0]} ||
      typeOf(getStats()).getShape() != ArrayRef<int64_t>{scores[0], 2})
    return emitOpError("needs scores [N, C], max [N, 1], labels [N] and "
                       "stats [N, 2]");
  return success();
}

LogicalResult VocabParallelCrossEntropyOp::verify() {
  ArrayRef<int64_t> scores = typeOf(getScores()).getShape();
  if (scores.size() != 2 ||
      typeOf(getMax()).getShape() != ArrayRef<int64_t>{scores[0], 1} ||
      typeOf(getStats()).getShape() != ArrayRef<int64_t>{scores[0], 2} ||
      typeOf(getLabels()).getShape() != ArrayRef<int64_t>{scores[0]} ||
      typeOf(getLoss()).getRank() != 0 ||
      typeOf(getLogProb()) != typeOf(getScores()))
    return emitOpError("needs scores [N, C], max [N, 1], stats [N, 2], "
                       "labels [N]; gives a scalar loss and log_prob like "
                       "scores");
  return success();
}

/// Only the scores get a gradient: max and stats are sums the loss is
/// invariant to (the max) or whose contribution the softmax carries.
LogicalResult
VocabParallelCrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                            SmallVectorImpl<Value> &dxs) {
  if (!grad::prepare(*this, dys, dxs))
    return success();
  if (dys[1])
    return emitOpError("autodiff: the loss depends on log_prob, whose "
                       "gradient weft does not implement");
  dxs[0] = VocabParallelCrossEntropyGradOp::create(
      b, getLoc(), getScores().getType(), getLogProb(), getLabels(), dys[0],
      getGridAttr(), getGridAxesAttr(), getIgnoreIndexAttr());
  return success();
}
