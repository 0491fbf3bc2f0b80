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

/// Loss result shape: scalar unless reduction is "none" (then target's shape).
LogicalResult inferLoss(std::optional<Location> loc, RankedTensorType scores,
                        RankedTensorType target, StringRef reduction,
                        Types &out) {
  if (scores.getRank() < 2 || target.getRank() != scores.getRank() - 1 ||
      target.getDimSize(0) != scores.getDimSize(0) ||
      target.getShape().drop_front() != scores.getShape().drop_front(2))
    return emitOptionalError(loc,
                             "expected scores [N, C, d...] and target "
                             "[N, d...], got ",
                             scores, " and ", target);
  Type element = scores.getElementType();
  out.push_back(reduction == "none"
                    ? RankedTensorType::get(target.getShape(), element)
                    : RankedTensorType::get({}, element));
  return success();
}

/// softmax_cross_entropy's (loss, log_prob), or (loss, log_sum_exp).
LogicalResult
inferCrossEntropy(std::optional<Location> loc, RankedTensorType scores,
                  RankedTensorType labels, bool weights, StringRef reduction,
                  std::optional<Type> logProbType, bool logSumExp, Types &out) {
  // log_prob_type: f32 loss and log-probabilities of 16-bit scores.
  RankedTensorType logProb = scores;
  if (logProbType) {
    Type element = scores.getElementType();
    if (*logProbType != element &&
        !(logProbType->isF32() && (element.isBF16() || element.isF16()) &&
          !weights))
      return emitOptionalError(loc, "softmax_cross_entropy: log_prob_type ",
                               *logProbType, " is neither the scores' ",
                               element,
                               " nor f32 beside 16-bit scores without "
                               "weights");
    logProb = scores.clone(*logProbType);
  }
  if (failed(inferLoss(loc, logProb, labels, reduction, out)))
    return failure();
  // log_sum_exp: one number per sample [N, d...] instead of log_prob.
  out.push_back(logSumExp ? logProb.clone(labels.getShape()) : logProb);
  return success();
}

LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return op->emitOpError("reduction must be 'mean', 'sum' or 'none', got '")
           << reduction << "'";
  return success();
}
} // namespace

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor, Types &out) {
  return inferCrossEntropy(
      loc, ranked(adaptor.getScores()), ranked(adaptor.getLabels()),
      bool(adaptor.getWeights()), adaptor.getReduction(),
      adaptor.getLogProbType(), bool(adaptor.getLogSumExp()), out);
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  return verifyReduction(*this, getReduction());
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor, Types &out) {
  return inferLoss(loc, ranked(adaptor.getInput()), ranked(adaptor.getTarget()),
                   adaptor.getReduction(), out);
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

LogicalResult NllLossGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location>,
                                              Adaptor adaptor, Types &out) {
  out.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult SoftmaxCrossEntropyAndGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor, Types &out) {
  if (failed(inferCrossEntropy(
          loc, ranked(adaptor.getScores()), ranked(adaptor.getLabels()),
          bool(adaptor.getWeights()), adaptor.getReduction(),
          adaptor.getLogProbType(), /*logSumExp=*/true, out)))
    return failure();
  out.push_back(adaptor.getScores().getType());
  return success();
}

/// The seed is d step / d loss: the loss's type.
LogicalResult SoftmaxCrossEntropyAndGradOp::verify() {
  if (getGrad().getType() != getLoss().getType())
    return emitOpError("grad must have the loss's type ")
           << getLoss().getType() << ", got " << getGrad().getType();
  return verifyReduction(*this, getReduction());
}
