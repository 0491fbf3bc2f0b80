//===- AppendOptimizer.cpp - weft-append-optimizer ------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_APPENDOPTIMIZER
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct AppendOptimizerPass
    : weft::impl::AppendOptimizerBase<AppendOptimizerPass> {
  using AppendOptimizerBase::AppendOptimizerBase;

  void runOnOperation() override {
    if (failed(append(getOperation())))
      signalPassFailure();
  }

  LogicalResult append(func::FuncOp func) {
    if (optimizer != "sgd" && optimizer != "adamw")
      return func.emitError("unknown optimizer '")
             << optimizer << "' (expected sgd or adamw)";
    bool adamw = optimizer == "adamw";
    // torch's defaults: AdamW decays by 0.01, SGD does not decay.
    double decay =
        weightDecay >= 0 ? weightDecay.getValue() : (adamw ? 0.01 : 0.0);
    if (lr <= 0 || decay < 0 || momentum < 0 || beta1 < 0 || beta1 >= 1 ||
        beta2 < 0 || beta2 >= 1 || eps <= 0)
      return func.emitError(
          "invalid optimizer hyper-parameters (need lr > 0, "
          "weight decay >= 0, momentum >= 0, betas in [0, 1), "
          "eps > 0)");
    if (nesterov && momentum == 0)
      return func.emitError("Nesterov momentum needs momentum > 0");

    Block &body = func.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    llvm::StringMap<BlockArgument> params;
    for (BlockArgument arg : func.getArguments())
      if (auto name =
              func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr))
        params[name.getValue()] = arg;

    OpBuilder b(ret);
    SmallVector<Value> results{ret.getOperand(0)};
    SmallVector<DictionaryAttr> resultAttrs{func.getResultAttrDict(0)};
    auto update = [&](Value v, StringRef name) {
      results.push_back(v);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(kUpdateAttr, b.getStringAttr(name))));
    };
    // A state tensor is its parameter's shape: a tensor-parallel slice of
    // the parameter keeps a slice of the state, which says which (weft.shard)
    // so a checkpoint can be resharded to another layout.
    // A 16-bit parameter (weft-mixed-precision) is a working copy: its
    // master and the moments are f32, the parameter's shape.
    auto stateType = [](BlockArgument param) -> Type {
      auto type = cast<RankedTensorType>(param.getType());
      if (!type.getElementType().isF16() && !type.getElementType().isBF16())
        return type;
      return type.clone(Float32Type::get(type.getContext()));
    };
    auto newState = [&](BlockArgument param, std::string name,
                        StringRef masterOf = {}) {
      NamedAttrList attrs;
      attrs.set(kOptimizerStateAttr, b.getStringAttr(name));
      if (!masterOf.empty())
        attrs.set(kMasterOfAttr, b.getStringAttr(masterOf));
      if (Attribute slice = func.getArgAttr(param.getArgNumber(), kShardAttr))
        attrs.set(kShardAttr, slice);
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(index, stateType(param),
                                     attrs.getDictionary(b.getContext()),
                                     func.getLoc())))
        return Value();
      return Value(func.getArgument(index));
    };
    bool sawGrad = false;
    for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
      auto name = func.getResultAttrOfType<StringAttr>(i, kGradAttr);
      if (!name)
        continue;
      sawGrad = true;
      BlockArgument param = params.lookup(name.getValue());
      if (!param)
        return func.emitError("gradient of unknown parameter '") << name << "'";
      Value grad = ret.getOperand(i);
      Type type = param.getType(), state = stateType(param);
      std::string base = name.getValue().str();
      Value master = state != type
                         ? newState(param, base + ".master", base)
                         : Value();
      Type masterType = master ? state : Type();
      if (adamw) {
        Value m = newState(param, base + ".exp_avg");
        Value v = newState(param, base + ".exp_avg_sq");
        auto op = AdamWOp::create(
            b, param.getLoc(), type, state, state, masterType, param, grad, m,
            v, master, Value(), Value(), b.getF64FloatAttr(lr),
            b.getF64FloatAttr(beta1),
            b.getF64FloatAttr(beta2), b.getF64FloatAttr(eps),
            b.getF64FloatAttr(decay));
        setTaskKind(op, TaskKind::Update);
        update(op.getNewParam(), base);
        update(op.getNewExpAvg(), base + ".exp_avg");
        update(op.getNewExpAvgSq(), base + ".exp_avg_sq");
        if (master)
          update(op.getNewMaster(), base + ".master");
      } else {
        Value buffer = momentum != 0
                           ? newState(param, base + ".momentum_buffer")
                           : Value();
        SmallVector<Type> types{type};
        types.append((buffer ? 1 : 0) + (master ? 1 : 0), state);
        auto op =
            SGDOp::create(b, param.getLoc(), types, param, grad, buffer,
                          master, Value(), Value(), b.getF64FloatAttr(lr),
                          b.getF64FloatAttr(momentum),
                          b.getF64FloatAttr(decay), b.getBoolAttr(nesterov));
        setTaskKind(op, TaskKind::Update);
        update(op.getUpdated()[0], base);
        if (buffer)
          update(op.getUpdated()[1], base + ".momentum_buffer");
        if (master)
          update(op.getUpdated().back(), base + ".master");
      }
    }
    // Batch-norm running statistics are state the step updates: return the
    // last update of each (the end of its chain across micro-batches) so the
    // next step sees it; the bytes are the state's (inPlaceOperand).
    for (Operation &op : body.without_terminator()) {
      auto bn = dyn_cast<BatchNormOp>(op);
      if (!bn || !bn.getTraining())
        continue;
      for (unsigned r : {1u, 2u}) {
        Value stats = bn->getResult(r);
        BlockArgument root = batchNormStateRoot(stats);
        bool chained = llvm::any_of(stats.getUsers(), [](Operation *user) {
          return isa<BatchNormOp>(user);
        });
        if (root && !chained)
          update(stats, func.getArgAttrOfType<StringAttr>(root.getArgNumber(),
                                                          kStateAttr)
                            .getValue());
      }
    }
    if (!sawGrad)
      return func.emitError("no parameter gradients to apply: run "
                            "weft-autodiff first");
    replaceReturn(func, results, resultAttrs);
    return success();
  }
};

} // namespace
