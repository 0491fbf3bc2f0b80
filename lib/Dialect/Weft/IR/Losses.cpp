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

/// The kernel's rule; the plan says which the last input is (the class
/// weights or the log-sum-exp) by an attribute.
LogicalResult
SoftmaxCrossEntropyGradOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor, Types &out) {
  SmallVector<NamedAttribute, 1> extra;
  if (adaptor.getLogSumExp())
    extra.push_back(NamedAttribute(StringAttr::get(ctx, "log_sum_exp"),
                                   UnitAttr::get(ctx)));
  return inferKernelTypes<SoftmaxCrossEntropyGradOp>(ctx, loc, adaptor, out,
                                                     extra);
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
