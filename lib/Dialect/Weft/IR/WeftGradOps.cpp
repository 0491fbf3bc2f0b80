//===- WeftGradOps.cpp - verification and cost of backward-only ops -------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/ops/OpCheck.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace weft;

int64_t WgradBiasOp::getFlops() {
  auto grad = cast<RankedTensorType>(getGrad().getType());
  int64_t n = grad.getDimSize(1);
  int64_t k = cast<RankedTensorType>(getInput().getType()).getDimSize(1);
  int64_t flops = 2 * grad.getNumElements() * k + grad.getNumElements();
  return getAccumulate().empty() ? flops : flops + n * k + n;
}

LogicalResult GatherGradOp::verify() {
  if (Value sum = getAccumulate(); sum && sum.getType() != getType())
    return emitOpError("accumulates into ")
           << sum.getType() << ", not its result's type " << getType();
  return success();
}

int64_t LayerNormGradOp::getFlops() {
  // The accumulate's add counts as the add op it replaced did.
  return (getAccumulate() ? 13 : 12) * numElements(getInput().getType());
}
int64_t GatherGradOp::getFlops() {
  // The accumulate's add counts as the add op it replaced did.
  int64_t flops = numElements(getGrad().getType());
  return getAccumulate() ? flops + numElements(getType()) : flops;
}
int64_t SoftmaxCrossEntropyGradOp::getFlops() {
  return (getLogSumExp() ? 4 : 3) * numElements(getInput().getType());
}

/// The input gradient of a pooling/resize op has the input's type.
static LogicalResult verifyInputGrad(Operation *op) {
  if (op->getResult(0).getType() != op->getOperand(0).getType())
    return op->emitOpError("result must have the input's type");
  return success();
}
LogicalResult MaxPoolGradOp::verify() { return verifyInputGrad(*this); }
LogicalResult AvgPoolGradOp::verify() { return verifyInputGrad(*this); }
LogicalResult ResizeGradOp::verify() { return verifyInputGrad(*this); }

static int64_t product(ArrayRef<int64_t> v) {
  int64_t p = 1;
  for (int64_t x : v)
    p *= x;
  return p;
}
int64_t ConvWeightGradOp::getFlops() {
  // Per output position: M * (C/g) * prod(k) multiply-adds (per group).
  return 2 * numElements(getGrad().getType()) * numElements(getType()) /
         getType().getDimSize(0);
}
int64_t MaxPoolGradOp::getFlops() {
  return numElements(getGrad().getType()) * product(getKernelShape());
}
int64_t AvgPoolGradOp::getFlops() {
  return numElements(getGrad().getType()) * product(getKernelShape());
}
int64_t ResizeGradOp::getFlops() { return numElements(getGrad().getType()); }

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

int64_t FoundInfOp::getFlops() {
  int64_t n = 0;
  for (Value g : getGrads())
    n += numElements(g.getType());
  return n;
}
int64_t UpdateLossScaleOp::getFlops() { return 4; }

namespace {
bool isF32Scalar(Type t, int64_t elements) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && type.getElementType().isF32() &&
         (elements == 1 ? type.getRank() == 0
                        : type.getShape() == ArrayRef<int64_t>{elements});
}
} // namespace

LogicalResult FoundInfOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  if (!isF32Scalar(getFound().getType(), 1))
    return emitOpError("returns tensor<f32>");
  return success();
}

LogicalResult UpdateLossScaleOp::verify() {
  if (!isF32Scalar(getScaler().getType(), 3) ||
      getNewScaler().getType() != getScaler().getType())
    return emitOpError("updates a tensor<3xf32> scaler state in place");
  if (!isF32Scalar(getFoundInf().getType(), 1))
    return emitOpError("reads found_inf as tensor<f32>");
  // Written so that a NaN factor fails too.
  double growth = getGrowthFactor().convertToDouble(),
         backoff = getBackoffFactor().convertToDouble();
  bool valid =
      getGrowthInterval() >= 1 && growth > 1 && backoff > 0 && backoff < 1;
  if (!valid)
    return emitOpError("needs growth_interval >= 1, growth_factor > 1 and "
                       "backoff_factor in (0, 1)");
  return success();
}

namespace {
/// An update's operand and result types: the gradient and the new parameter
/// have the parameter's type; the state (moments, momentum buffer) and its
/// results have the master's when there is one (f32, the parameter's shape,
/// the parameter 16-bit), else the parameter's.
LogicalResult verifyUpdate(Operation *op, Value param, Value grad,
                           ValueRange state, Value master, Value scaler,
                           Value foundInf) {
  if (bool(scaler) != bool(foundInf))
    return op->emitOpError("a loss scaler comes with found_inf");
  if (scaler && (!isF32Scalar(scaler.getType(), 3) ||
                 !isF32Scalar(foundInf.getType(), 1)))
    return op->emitOpError("the loss scaler is tensor<3xf32>, found_inf "
                           "tensor<f32>");
  Type p = param.getType();
  if (grad.getType() != p)
    return op->emitOpError("the gradient must have the parameter's type");
  Type s = p;
  if (master) {
    auto pt = cast<RankedTensorType>(p);
    auto mt = cast<RankedTensorType>(master.getType());
    if (!pt.getElementType().isF16() && !pt.getElementType().isBF16())
      return op->emitOpError("a master copy needs an f16 or bf16 parameter");
    if (!mt.getElementType().isF32() || mt.getShape() != pt.getShape())
      return op->emitOpError("the master copy must be the parameter's "
                             "shape in f32");
    s = mt;
  }
  for (Value v : state)
    if (v.getType() != s)
      return op->emitOpError("optimizer state must have the ")
             << (master ? "master's" : "parameter's") << " type";
  auto results = op->getResults();
  if (results.size() != 1 + state.size() + (master ? 1 : 0))
    return op->emitOpError("returns the parameter, its state")
           << (master ? " and its master" : "") << ", got " << results.size()
           << " results";
  if (results[0].getType() != p)
    return op->emitOpError("the new parameter must have its type");
  for (Value v : results.drop_front())
    if (v.getType() != s)
      return op->emitOpError("the new state must have its type");
  return success();
}
} // namespace

LogicalResult AdamWOp::verify() {
  return verifyUpdate(*this, getParam(), getGrad(),
                      {getExpAvg(), getExpAvgSq()}, getMaster(), getScaler(),
                      getFoundInf());
}

LogicalResult SGDOp::verify() {
  if ((getMomentum().convertToDouble() != 0.0) != bool(getMomentumBuffer()))
    return emitOpError(
        "a momentum buffer is needed exactly when momentum != 0");
  SmallVector<Value> state;
  if (Value buffer = getMomentumBuffer())
    state.push_back(buffer);
  return verifyUpdate(*this, getParam(), getGrad(), state, getMaster(),
                      getScaler(), getFoundInf());
}

SmallVector<std::pair<Value, Value>> weft::optimizerState(Operation *update) {
  SmallVector<std::pair<Value, Value>> state;
  if (auto adamw = dyn_cast<AdamWOp>(update)) {
    state = {{adamw.getExpAvg(), adamw.getNewExpAvg()},
             {adamw.getExpAvgSq(), adamw.getNewExpAvgSq()}};
    if (Value master = adamw.getMaster())
      state.push_back({master, adamw.getNewMaster()});
    return state;
  }
  auto sgd = cast<SGDOp>(update);
  if (Value buffer = sgd.getMomentumBuffer())
    state.push_back({buffer, sgd.getUpdated()[1]});
  if (Value master = sgd.getMaster())
    state.push_back({master, sgd.getUpdated().back()});
  return state;
}

BlockArgument weft::batchNormStateRoot(Value stats) {
  if (auto arg = dyn_cast<BlockArgument>(stats)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    return func && func.getArgAttr(arg.getArgNumber(), kStateAttr)
               ? arg
               : BlockArgument();
  }
  auto bn = stats.getDefiningOp<BatchNormOp>();
  unsigned r = cast<OpResult>(stats).getResultNumber();
  if (!bn || !bn.getTraining() || r == 0)
    return BlockArgument();
  return batchNormStateRoot(bn->getOperand(r + 2));
}

std::optional<unsigned> weft::inPlaceOperand(Operation *op, unsigned result) {
  // Communication: wait_recv yields the buffer its irecv filled (operand
  // 1), wait_collective the buffer its collective filled (operand 0).
  if (isa<WaitRecvOp>(op))
    return 1u;
  if (isa<WaitCollectiveOp>(op))
    return 0u;
  // Kernels: the pairs of their specification (the optimizer updates, the
  // loss scaler, assign; the accumulating gradients, present when their
  // accumulate operand is; batch_norm's statistics and the fused loss's
  // scores gradient, which may run in place).
  const ops::OpRecord *record = opRecord(op);
  if (!record || !record->isKernel())
    return std::nullopt;
  std::optional<ops::InPlacePair> pair =
      ops::inPlaceInput(record->op, static_cast<int>(result));
  if (!pair || unsigned(pair->input) >= op->getNumOperands())
    return std::nullopt;
  // batch_norm updates its running statistics in place only where they are
  // state (a weft.state argument, or the statistics an earlier micro-batch's
  // batch_norm updated): never a constant the model reads again.
  // weft-fold-loss-grad fuses the loss only where nothing reads the scores
  // after it, so its scores gradient always overwrites them.
  if (isa<BatchNormOp>(op) && !batchNormStateRoot(op->getResult(result)))
    return std::nullopt;
  // An add runs in place only where it sums micro-batches into a running
  // sum that nothing else reads (weft-accumulate-microbatches marks it).
  if (isa<AddOp>(op) && !op->hasAttr(kAccumulateAttr))
    return std::nullopt;
  return unsigned(pair->input);
}

void weft::accumulateInPlaceIfOwned(AddOp add) {
  Value v = add.getLhs();
  if (!v.hasOneUse() || v.getType() != add.getType())
    return;
  while (auto result = dyn_cast<OpResult>(v)) {
    Operation *def = result.getOwner();
    if (isa<ConstantOp>(def))
      return;
    std::optional<unsigned> alias =
        aliasedOperand(def, result.getResultNumber());
    // Bytes of its own; or an earlier in-place sum, owned over the rest of
    // the chain when it was marked (its values read only by the next one
    // since): walking that again per share made accumulating M
    // micro-batches O(M^2), 22 s of GPT-3 530B's compile.
    if (!alias || (isa<AddOp>(def) && def->hasAttr(kAccumulateAttr))) {
      add->setAttr(kAccumulateAttr, UnitAttr::get(add.getContext()));
      return;
    }
    v = def->getOperand(*alias);
    if (!v.hasOneUse())
      return;
  }
  // An argument's bytes: never overwritten.
}
