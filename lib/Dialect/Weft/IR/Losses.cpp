//===- Losses.cpp - the classification losses' type rules -----------------===//
//
// Result types and verifiers of softmax_cross_entropy and nll_loss (ONNX
// SoftmaxCrossEntropyLoss-13, NegativeLogLikelihoodLoss-13), of their
// gradients, and of softmax_cross_entropy_and_grad, which is one of each.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

using namespace mlir;
using namespace weft;

namespace {
using Types = SmallVectorImpl<Type>;

RankedTensorType ranked(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return op->emitOpError("reduction must be 'mean', 'sum' or 'none', got '")
           << reduction << "'";
  return success();
}
} // namespace

LogicalResult SoftmaxCrossEntropyOp::verify() {
  return verifyReduction(*this, getReduction());
}

LogicalResult NllLossOp::verify() {
  return verifyReduction(*this, getReduction());
}

LogicalResult SoftmaxCrossEntropyGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor, Types &out) {
  RankedTensorType input = ranked(adaptor.getInput());
  std::optional<Type> type = adaptor.getGradType();
  out.push_back(type ? input.clone(*type) : input);
  return success();
}

/// The log-sum-exp, when given, is the scores' [N, d...] (their labels'
/// shape), of the forward's log_prob_type.
LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  Value lse = getLogSumExp();
  if (!lse)
    return success();
  auto type = cast<RankedTensorType>(lse.getType());
  auto labels = cast<RankedTensorType>(getLabels().getType());
  if (type.getShape() != labels.getShape())
    return emitOpError("log_sum_exp must be [N, d...] as the labels ")
           << labels << ", got " << type;
  return success();
}

/// The seed is d step / d loss: the loss's type.
LogicalResult SoftmaxCrossEntropyAndGradOp::verify() {
  if (getGrad().getType() != getLoss().getType())
    return emitOpError("grad must have the loss's type ")
           << getLoss().getType() << ", got " << getGrad().getType();
  return verifyReduction(*this, getReduction());
}
