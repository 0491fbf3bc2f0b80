//===- Autodiff.cpp - weft-autodiff: reverse-mode differentiation ---------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

namespace weft {
#define GEN_PASS_DEF_AUTODIFF
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct AutodiffPass : weft::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    if (microbatches < 1 || replicas < 1) {
      getOperation().emitError("weft-autodiff: microbatches and replicas "
                               "must be at least 1");
      return signalPassFailure();
    }
    if (failed(differentiate(getOperation())))
      signalPassFailure();
  }

  LogicalResult differentiate(func::FuncOp func) {
    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (ret.getNumOperands() != 1 || !isFloatTensor(ret.getOperand(0)) ||
        cast<RankedTensorType>(ret.getOperand(0).getType()).getRank() != 0)
      return func.emitError("training needs the model to return one scalar "
                            "float loss; @")
             << func.getSymName() << " returns " << ret.getOperandTypes();
    Value loss = ret.getOperand(0);

    // Forward: which values depend on a parameter (and so need a gradient).
    llvm::DenseSet<Value> active;
    SmallVector<BlockArgument> params;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kParamAttr) &&
          isFloatTensor(arg)) {
        active.insert(arg);
        params.push_back(arg);
      }
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator()) {
      ops.push_back(&op);
      bool depends = llvm::any_of(op.getOperands(),
                                  [&](Value v) { return active.contains(v); });
      if (depends)
        for (Value r : op.getResults())
          if (isFloatTensor(r))
            active.insert(r);
    }
    if (!active.contains(loss))
      return func.emitError("training needs a parameter the loss depends on; "
                            "the loss of @")
             << func.getSymName() << " depends on none";

    // Backward, in reverse order, accumulating gradients per value.
    OpBuilder b(ret);
    llvm::DenseMap<Value, Value> grads;
    auto lossType = cast<RankedTensorType>(loss.getType());
    // d step / d loss: this micro-batch's and replica's share of a mean
    // over M D of them, 1/(M D), as `(loss / M).backward()` under DDP's
    // averaging; the passes that sum the shares read the attributes.
    double share = 1.0 / double(microbatches * replicas);
    auto shareOf = [&](RankedTensorType type) {
      return ConstantOp::create(
          b, loss.getLoc(),
          DenseElementsAttr::get(type,
                                 b.getFloatAttr(type.getElementType(), share)));
    };
    grads[loss] = shareOf(lossType);
    if (microbatches > 1)
      func->setAttr(kSeedMicrobatchesAttr, b.getI64IntegerAttr(microbatches));
    if (replicas > 1)
      func->setAttr(kSeedReplicasAttr, b.getI64IntegerAttr(replicas));
    // f16 loss scaling: d(scale * loss) = scale, the scaler's element 0.
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kLossScalerAttr)) {
        Value scale = ReshapeOp::create(
            b, loss.getLoc(),
            SliceOp::create(b, loss.getLoc(), arg, {0}, {1}, {1}),
            ArrayRef<int64_t>{});
        if (getElementTypeOrSelf(scale) != lossType.getElementType())
          scale = CastOp::create(b, loss.getLoc(), scale,
                                 lossType.getElementType(), true);
        if (share != 1.0)
          scale = MulOp::create(b, loss.getLoc(), scale, shareOf(lossType));
        grads[loss] = scale;
      }
    for (Operation *op : llvm::reverse(ops)) {
      SmallVector<Value> dys;
      bool any = false;
      for (Value r : op->getResults()) {
        dys.push_back(grads.lookup(r));
        any |= static_cast<bool>(dys.back());
      }
      bool needed = llvm::any_of(op->getOperands(),
                                 [&](Value v) { return active.contains(v); });
      if (!any || !needed)
        continue;
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule)
        return op->emitOpError("has no gradient rule, but the loss depends on "
                               "it through a parameter");
      // Backward ops carry the forward op's location (its ONNX node) and
      // pipeline stage.
      Operation *before = ret->getPrevNode();
      SmallVector<Value> dxs;
      if (failed(rule.buildGradients(b, dys, dxs)))
        return failure();
      for (auto [operand, dx] : llvm::zip(op->getOperands(), dxs)) {
        if (!dx || !active.contains(operand))
          continue;
        Value &acc = grads[operand];
        acc = acc ? Value(AddOp::create(b, op->getLoc(), acc, dx)) : dx;
      }
      if (std::optional<int64_t> stage = stageOf(op))
        for (Operation *created = before->getNextNode(); created != ret;
             created = created->getNextNode())
          if (!isa<ConstantOp>(created)) {
            TaskFields task = TaskFields::of(created);
            task.stage = stage;
            setTask(created, task);
          }
    }

    // Return the loss, then each parameter's gradient.
    SmallVector<Value> results{loss};
    for (BlockArgument param : params) {
      Value g = grads.lookup(param);
      if (!g) { // the parameter does not reach the loss: zero gradient
        auto type = cast<RankedTensorType>(param.getType());
        g = ConstantOp::create(
            b, param.getLoc(),
            DenseElementsAttr::get(type,
                                   b.getFloatAttr(type.getElementType(), 0.0)));
      }
      results.push_back(g);
    }
    SmallVector<DictionaryAttr> resultAttrs{func.getResultAttrDict(0)};
    for (BlockArgument param : params)
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          kGradAttr, func.getArgAttr(param.getArgNumber(), kParamAttr))));
    replaceReturn(func, results, resultAttrs);

    // Rules compute a gradient for every float operand; those of inactive
    // operands (model inputs, constants) are dead: drop them.
    SmallVector<Operation *> backward;
    for (Operation &op :
         llvm::make_range(std::next(ops.back()->getIterator()), body.end()))
      backward.push_back(&op);
    llvm::DenseSet<Operation *> inputGradient =
        splitWeightGradients ? activationGradientOps(backward, grads)
                             : llvm::DenseSet<Operation *>();
    for (Operation *op : llvm::reverse(backward))
      if (op->use_empty() && isPure(op) &&
          !op->hasTrait<OpTrait::IsTerminator>()) {
        inputGradient.erase(op);
        op->erase();
      }

    // Mark the backward ops: the plan tags their instructions.
    for (Operation &op :
         llvm::make_range(std::next(ops.back()->getIterator()), body.end()))
      if (!op.hasTrait<OpTrait::IsTerminator>())
        setTaskKind(&op, !splitWeightGradients || inputGradient.contains(&op)
                             ? TaskKind::Backward
                             : TaskKind::Weight);
    return success();
  }

  /// The backward ops (`backward`, in program order) that the gradient of
  /// some activation, a forward op's result, needs: B of the B/W split.
  /// The other backward ops only feed parameters' gradients: W.
  static llvm::DenseSet<Operation *>
  activationGradientOps(ArrayRef<Operation *> backward,
                        const llvm::DenseMap<Value, Value> &grads) {
    llvm::DenseSet<Operation *> inBackward(backward.begin(), backward.end());
    llvm::DenseSet<Operation *> needed;
    SmallVector<Operation *> work;
    auto need = [&](Value v) {
      if (Operation *def = v.getDefiningOp();
          def && inBackward.contains(def) && needed.insert(def).second)
        work.push_back(def);
    };
    for (auto &[value, grad] : grads)
      if (!isa<BlockArgument>(value))
        need(grad);
    while (!work.empty())
      for (Value operand : work.pop_back_val()->getOperands())
        need(operand);
    return needed;
  }
};

} // namespace
