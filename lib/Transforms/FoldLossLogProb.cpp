//===- FoldLossLogProb.cpp - weft-fold-loss-log-prob ----------------------===//
//
// A softmax cross-entropy gives the loss and the log-probabilities, which
// only its gradient reads when the model does not: an [N, C] tensor as
// large as the logits (a language model's largest activation; twice as
// large under mixed precision, whose log_prob_type is f32 beside 16-bit
// logits), written forward, kept across the step and read backward. Where
// nothing reads it, the loss keeps one log-sum-exp per sample instead
// (`log_sum_exp`) and the gradient recomputes the log-probabilities from
// the scores, which it reads in their place (Apex's xentropy). Autodiff
// runs after this pass and builds that gradient.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

namespace weft {
#define GEN_PASS_DEF_FOLDLOSSLOGPROB
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct FoldLossLogProbPass
    : weft::impl::FoldLossLogProbBase<FoldLossLogProbPass> {
  void runOnOperation() override {
    WalkResult walk = getOperation().walk([](SoftmaxCrossEntropyOp loss) {
      if (loss.getLogSumExp() || !loss.getLogProb().use_empty())
        return WalkResult::advance();
      loss.setLogSumExp(true);
      // Unread, so retyped in place: [N, C, d...] -> [N, d...].
      return WalkResult(reinferResultTypes(loss));
    });
    if (walk.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
