//===- MixedPrecision.cpp - weft-mixed-precision --------------------------===//
//
// torch.autocast's rule, applied once to the forward graph: each op's
// operands get the precision its list names (16-bit for the GEMM-like ops,
// f32 for the reductions that lose accuracy in 16 bits, the widest operand's
// for binary ops, the operand's own for the rest), then its results are
// re-inferred. Running before weft-autodiff means the backward needs no
// rule of its own: a cast's gradient is the cast back, so a 16-bit forward
// op gets a 16-bit backward and a parameter's gradient has the 16-bit
// working copy's type, as in Megatron-LM and DeepSpeed.
//
// A LayerNorm or RMSNorm between 16-bit ops (a transformer's, between the
// residual stream and the next linear layer) then reads its input through a
// cast up and is read only through casts down (under sequence parallelism
// after the all-gather that leaves the sequence-parallel region). Its kernels
// load 16 bits, compute in f32 (double sums) and round each output once,
// exactly as the cast chain does, so the casts go: x and y stay 16-bit
// (Megatron-LM's and Apex's mixed-dtype fused LayerNorm), and the backward
// follows with 16-bit dx and dy. Four activation-sized copies per LayerNorm and
// step fewer, the same bits. Scale and bias that are 16-bit parameters cast up
// are read as they are as well (the kernels widen them exactly; their
// gradients, summed in double, round through f32 to 16 bits as the casts'
// gradients did): two casts forward and two back per LayerNorm fewer,
// kernel launches of no size. Under sequence parallelism this is what
// keeps Megatron-LM's 34 sbh/t bytes a layer (Korthikanti et al. 2022,
// Table 2): the norm's 16-bit input is the layer's kept copy, and its
// 16-bit output the shard that weft-regather-sequence-parallel gathers
// again in the backward (an f32 output would be gathered in f32, cast, and
// the cast's whole-sequence result kept). The cross-entropy loss likewise
// reads 16-bit logits (a language model's largest activation) and writes
// f32 log-probabilities, its gradient 16 bits: the logits' casts up and
// down go, with the same bits. A softmax between 16-bit ops narrows the same
// way, and through the attention dropout after it (Megatron-LM's order: its
// fused softmax writes 16 bits, and the dropout scales those).
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#include "llvm/ADT/SetVector.h"

namespace weft {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// Which precision an op's float operands get: its record's Precision
/// (runtime/include/weft/ops/Ops.def, torch.autocast's op lists); ops of
/// other dialects keep their operands.
using Policy = ops::Precision;

Policy policyOf(Operation *op) {
  const ops::OpRecord *r = opRecord(op);
  return r ? r->precision : Policy::Follow;
}

bool isF32(Value v) {
  auto type = dyn_cast<ShapedType>(v.getType());
  return type && type.getElementType().isF32();
}

struct MixedPrecisionPass : weft::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using MixedPrecisionBase::MixedPrecisionBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (precision != "bf16" && precision != "f16" && precision != "f32") {
      func.emitError("weft-mixed-precision: precision '")
          << precision << "' is not bf16, f16 or f32";
      return signalPassFailure();
    }
    if (precision == "f32")
      return;
    Builder b(func.getContext());
    low = precision == "bf16" ? Type(b.getBF16Type()) : b.getF16Type();
    if (failed(check(func)) || failed(rewrite(func)))
      signalPassFailure();
  }

  /// Only f32 models: an f64 one asks for its precision explicitly.
  LogicalResult check(func::FuncOp func) {
    WalkResult walk = func.walk([&](Operation *op) {
      for (Value v : op->getResults())
        if (auto type = dyn_cast<ShapedType>(v.getType());
            type && type.getElementType().isF64()) {
          op->emitError("--precision ")
              << precision << " needs an f32 model; this value is "
              << v.getType();
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  LogicalResult rewrite(func::FuncOp func) {
    Block &body = func.getBody().front();
    // Parameters become 16-bit working copies (the f32 master is the
    // optimizer's); inputs and state (batch-norm statistics) keep f32.
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kParamAttr) && isF32(arg))
        arg.setType(cast<RankedTensorType>(arg.getType()).clone(low));
    if (lossScaling) {
      Builder b(func.getContext());
      NamedAttrList attrs;
      attrs.set(kOptimizerStateAttr, b.getStringAttr("loss_scaler"));
      attrs.set(kLossScalerAttr, b.getUnitAttr());
      if (failed(func.insertArgument(func.getNumArguments(),
                                     RankedTensorType::get({3}, b.getF32Type()),
                                     attrs.getDictionary(func.getContext()),
                                     func.getLoc())))
        return failure();
    }
    for (Operation &op :
         llvm::make_early_inc_range(body.without_terminator())) {
      if (failed(retype(&op)))
        return failure();
      if (fp32Residual && isEmbeddingLookup(func, &op))
        widenResult(&op);
    }
    // Collected first: narrowing erases the casts around each op, which
    // may be the next in the block.
    SmallVector<Operation *> norms;
    for (Operation &op : body)
      if (isa<LayerNormOp, RmsNormOp>(op))
        norms.push_back(&op);
    SmallVector<SoftmaxCrossEntropyOp> losses(
        body.getOps<SoftmaxCrossEntropyOp>());
    SmallVector<SoftmaxOp> softmaxes(body.getOps<SoftmaxOp>());
    for (Operation *norm : norms)
      narrowNorm(norm);
    for (SoftmaxOp softmax : softmaxes)
      narrowSoftmax(softmax);
    for (SoftmaxCrossEntropyOp loss : losses)
      narrowLoss(loss);
    for (Operation *literal : literals)
      if (literal->use_empty())
        literal->erase();
    // The function's results keep their declared types.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder builder(ret);
    for (auto [operand, type] :
         llvm::zip(ret->getOpOperands(), func.getResultTypes()))
      if (operand.get().getType() != type)
        operand.set(castTo(builder, operand.get(),
                           cast<ShapedType>(type).getElementType()));
    func.setType(FunctionType::get(func.getContext(), body.getArgumentTypes(),
                                   func.getResultTypes()));
    return success();
  }

  /// A gather from a parameter table (Megatron's word or position
  /// embedding).
  static bool isEmbeddingLookup(func::FuncOp func, Operation *op) {
    auto gather = dyn_cast<GatherOp>(op);
    auto table = gather ? dyn_cast<BlockArgument>(gather.getData())
                        : BlockArgument();
    return table && func.getArgAttr(table.getArgNumber(), kParamAttr);
  }

  /// Ops whose result holds their operand's elements moved, not computed
  /// (a reshape; under tensor and sequence parallelism f's copy, the
  /// all-gather leaving the sequence-parallel region and a slice entering
  /// it): a cast to 16 bits commutes with them, bit for bit.
  static bool movesElements(Operation *op) {
    return isa<ReshapeOp, CopyToTensorParallelOp, shard::AllGatherOp,
               shard::AllSliceOp>(op);
  }

  /// Whether every reader of `v` reads it cast to the 16-bit type, itself
  /// or through ops that only move its elements (movesElements).
  bool readAsLow(Value v) {
    return llvm::all_of(v.getUsers(), [&](Operation *user) {
      // Rounded to nearest even, as the kernels round (not an ONNX Cast's
      // truncation).
      if (auto cast = dyn_cast<CastOp>(user))
        return cast.getType().getElementType() == low && cast.getNearestEven();
      return movesElements(user) && readAsLow(user->getResult(0));
    });
  }

  /// Gives `v` (read as low: readAsLow) the 16-bit type and its readers'
  /// casts to it their input. The ops that move it move 16 bits: under
  /// sequence parallelism the all-gather of a LayerNorm's output, and so
  /// its adjoint's reduce-scatter, carry half the bytes (as Megatron-LM's,
  /// which run in the activations' dtype), and the gathered tensor's
  /// re-gather in the backward keeps the 16-bit shard.
  void retypeLow(Value v) {
    v.setType(cast<RankedTensorType>(v.getType()).clone(low));
    for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
      if (movesElements(user)) {
        retypeLow(user->getResult(0));
        continue;
      }
      user->getResult(0).replaceAllUsesWith(v);
      user->erase();
    }
  }

  /// The cast that widened `operand`'s 16-bit value, if it is one.
  CastOp castUp(OpOperand &operand) {
    auto up = operand.get().getDefiningOp<CastOp>();
    return up && up.getInput().getType().getElementType() == low ? up
                                                                 : CastOp();
  }

  /// Points `operand` at `up`'s 16-bit input, erasing `up` once unread.
  static void readNarrow(OpOperand &operand, CastOp up) {
    operand.set(up.getInput());
    if (up->use_empty())
      up.erase();
  }

  /// `layer_norm(cast(x16 -> f32))` or `rms_norm(cast(x16 -> f32))` read
  /// only as 16 bits: the norm of x16 with a 16-bit output (the file
  /// comment says why the bits agree). Its scale and bias, when all are
  /// 16-bit parameters cast up, are read as they are too: the kernels widen
  /// them exactly, as the casts did. A LayerNorm also takes f32 affine
  /// operands beside a 16-bit input; an RMSNorm's scale has its input's
  /// type (NetworkSpecs.cpp), so it narrows only with its scale.
  void narrowNorm(Operation *norm) {
    OpOperand &x = norm->getOpOperand(0);
    CastOp up = castUp(x);
    if (!up || !readAsLow(norm->getResult(0)))
      return;
    SmallVector<std::pair<OpOperand *, CastOp>, 2> affine;
    for (OpOperand &operand : norm->getOpOperands().drop_front())
      if (CastOp cast = castUp(operand))
        affine.push_back({&operand, cast});
    bool allAffine = affine.size() == norm->getNumOperands() - 1;
    if (!allAffine && isa<RmsNormOp>(norm))
      return;
    readNarrow(x, up);
    retypeLow(norm->getResult(0));
    if (!allAffine)
      return; // one f32 and one 16-bit affine operand is no LayerNorm's
    for (auto [operand, cast] : affine)
      readNarrow(*operand, cast);
  }

  /// `softmax(cast(x16 -> f32))` read only as 16 bits, itself or through
  /// one dropout (the attention probabilities'): the softmax of x16 with a
  /// 16-bit output, and the dropout in 16 bits after it. The softmax's bits
  /// are the cast chain's (its kernels load 16 bits and compute in f32, as
  /// the file comment says of the norms); the dropout then scales the
  /// rounded probabilities, where autocast scales f32 ones and rounds once.
  /// That is Megatron-LM's form (its fused scale-mask-softmax writes 16
  /// bits, and the attention dropout runs on them), and what keeps its
  /// 2as^2b bytes of softmax output a layer (Korthikanti et al. 2022,
  /// Table 2) where f32 probabilities would keep twice that.
  void narrowSoftmax(SoftmaxOp softmax) {
    CastOp up = castUp(softmax.getInputMutable());
    if (!up)
      return;
    Value probs = softmax.getOutput();
    if (readAsLow(probs)) {
      readNarrow(softmax.getInputMutable(), up);
      retypeLow(probs);
      return;
    }
    auto dropout = probs.hasOneUse()
                       ? dyn_cast<DropoutOp>(*probs.getUsers().begin())
                       : DropoutOp();
    if (!dropout || !readAsLow(dropout.getOutput()))
      return;
    readNarrow(softmax.getInputMutable(), up);
    probs.setType(cast<RankedTensorType>(probs.getType()).clone(low));
    retypeLow(dropout.getOutput());
  }

  /// `softmax_cross_entropy(cast(x16 -> f32))` without class weights:
  /// the loss reads x16 itself and keeps f32 log-probabilities
  /// (log_prob_type), so the logits' widened copy, and in the backward the
  /// f32 gradient's cast down, go.
  void narrowLoss(SoftmaxCrossEntropyOp loss) {
    OpOperand &scores = loss.getScoresMutable();
    CastOp up = castUp(scores);
    if (!up || loss.getWeights())
      return;
    readNarrow(scores, up);
    loss.setLogProbTypeAttr(TypeAttr::get(Float32Type::get(loss.getContext())));
  }

  /// Every reader of `op`'s 16-bit result reads it cast to f32.
  void widenResult(Operation *op) {
    Value v = op->getResult(0);
    if (isF32(v))
      return;
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(op);
    Value wide = castTo(builder, v, Float32Type::get(op->getContext()));
    v.replaceAllUsesExcept(wide, wide.getDefiningOp());
  }

  Value castTo(OpBuilder &builder, Value v, Type element) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == element)
      return v;
    // A float literal (`x16 / 8.0`'s 8.0, a mask's fill) becomes a literal
    // of the new type, rounded to nearest even as the cast would: a cast
    // would be an activation computed every step, and kept when a
    // recomputed region reads it.
    if (auto constant = v.getDefiningOp<ConstantOp>())
      if (auto values = dyn_cast<DenseFPElementsAttr>(constant.getValueAttr());
          values && values.isSplat()) {
        APFloat x = values.getSplatValue<APFloat>();
        bool lost;
        x.convert(cast<FloatType>(element).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &lost);
        literals.insert(constant);
        return ConstantOp::create(
            builder, v.getLoc(),
            DenseElementsAttr::get(type.clone(element),
                                   builder.getFloatAttr(element, x)));
      }
    return CastOp::create(builder, v.getLoc(), v, element,
                          /*nearest_even=*/true);
  }

  /// The element type the op's float operands get, or null to leave them.
  Type target(Operation *op, ArrayRef<OpOperand *> floats) {
    switch (policyOf(op)) {
    case Policy::Low:
      return low;
    case Policy::Full:
      return Float32Type::get(op->getContext());
    case Policy::Promote:
    case Policy::Follow:
      break;
    }
    // torch's promotion: a rank-0 tensor does not widen a tensor of the
    // same kind, so `x16 / 8.0` stays 16-bit; among tensors (or among
    // scalars alone) the widest wins.
    bool anyTensor = llvm::any_of(floats, [](OpOperand *o) {
      return cast<ShapedType>(o->get().getType()).getRank() > 0;
    });
    bool wide = false, narrow = false;
    for (OpOperand *o : floats) {
      if (anyTensor && cast<ShapedType>(o->get().getType()).getRank() == 0)
        continue;
      (isF32(o->get()) ? wide : narrow) = true;
    }
    if (!narrow)
      return Type();
    return wide ? Type(Float32Type::get(op->getContext())) : low;
  }

  LogicalResult retype(Operation *op) {
    if (isa<CastOp, ConstantOp>(op))
      return success();
    SmallVector<OpOperand *> floats;
    for (OpOperand &o : op->getOpOperands()) {
      auto type = dyn_cast<ShapedType>(o.get().getType());
      if (type &&
          (type.getElementType().isF32() || type.getElementType() == low))
        floats.push_back(&o);
    }
    if (floats.empty())
      return success();
    if (Type element = target(op, floats)) {
      OpBuilder builder(op);
      for (OpOperand *o : floats)
        o->set(castTo(builder, o->get(), element));
    }
    // The results follow the operands: inferred, or (ops without
    // inference: unary elementwise, collectives) the first float operand's
    // element type on each f32 result.
    if (auto infer = dyn_cast<InferTypeOpInterface>(op)) {
      if (failed(reinferResultTypes(infer)))
        return op->emitError("weft-mixed-precision: cannot infer the "
                             "16-bit result type");
      return success();
    }
    Type element =
        cast<ShapedType>(floats.front()->get().getType()).getElementType();
    for (Value result : op->getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType());
          type && type.getElementType().isF32())
        result.setType(type.clone(element));
    return success();
  }

  Type low;
  /// Literals read through new ones (castTo): erased once unread.
  llvm::SetVector<Operation *> literals;
};

} // namespace
