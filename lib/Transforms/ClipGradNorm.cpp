//===- ClipGradNorm.cpp - weft-clip-grad-norm -----------------------------===//
//
// torch.nn.utils.clip_grad_norm_(parameters, max_norm) before the optimizer
// step, over a model split across the mesh. As Megatron-LM's
// clip_grad_norm_fp32 (megatron/core/optimizer/clip_grads.py), each rank
// sums the squares of the gradients it updates with and the sums are
// all-reduced, a gradient that several ranks hold counted once: here by
// weighting each rank's copy by 1 / (the ranks holding it). Runs once
// weft-data-parallel and weft-insert-send-recv have settled what each
// update reads and where it runs.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

#include <cmath>
#include <map>

namespace weft {
#define GEN_PASS_DEF_CLIPGRADNORM
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

constexpr unsigned kParamOperand = 0, kGradOperand = 1;

struct ClipGradNormPass : weft::impl::ClipGradNormBase<ClipGradNormPass> {
  using ClipGradNormBase::ClipGradNormBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!std::isfinite(maxNorm) || maxNorm <= 0) {
      func.emitError("weft-clip-grad-norm: max-norm must be a finite number "
                     "> 0, not ")
          << maxNorm;
      return signalPassFailure();
    }
    auto module = func->getParentOfType<ModuleOp>();
    FailureOr<std::optional<DeviceMesh>> mesh = getDeviceMesh(module);
    FailureOr<std::optional<DeviceMesh>> zeroMesh =
        getDeviceMesh(module, kZeroMeshSymbol);
    if (failed(mesh) || failed(zeroMesh))
      return signalPassFailure();
    mesh_ = *mesh;
    zeroMesh_ = *zeroMesh;

    // A parameter updated on several ranks (a tied embedding's copies on
    // two pipeline stages) counts at its update on the lowest stage.
    std::map<std::optional<int64_t>, SmallVector<Operation *>> ranks =
        updatesByRank(func);
    if (ranks.empty()) {
      func.emitError("weft-clip-grad-norm: no parameter updates to clip: run "
                     "weft-append-optimizer first");
      return signalPassFailure();
    }
    llvm::DenseMap<Value, Operation *> counted;
    for (auto &entry : ranks)
      for (Operation *update : entry.second) {
        auto [it, fresh] =
            counted.try_emplace(update->getOperand(kParamOperand), update);
        if (!fresh &&
            stageOf(update).value_or(0) < stageOf(it->second).value_or(0))
          it->second = update;
      }
    for (auto &[stage, group] : ranks)
      clip(func, group, counted, stage);
  }

  /// How many ranks hold the gradient `update` reads: its data-parallel
  /// copies (all replicas, or those of a ZeRO piece's group), and its
  /// tensor-parallel ones unless the parameter is a tensor shard.
  double copies(func::FuncOp func, Operation *update) const {
    double n = 1;
    if (mesh_) {
      int64_t data = mesh_->sizeOf("data");
      if (update->hasAttr(kFlatShardAttr))
        n *= double(data) /
             (zeroMesh_ ? zeroMesh_->sizeOf(kDataShardAxis) : data);
      else
        n *= data;
      auto arg = dyn_cast<BlockArgument>(update->getOperand(kParamOperand));
      if (!arg || !func.getArgAttr(arg.getArgNumber(), kShardAttr))
        n *= mesh_->sizeOf("tensor");
    }
    return n;
  }

  /// The gradients `group` (one rank's updates) read, scaled by
  /// min(1, max_norm / (norm + 1e-6)), the norm over the whole mesh.
  void clip(func::FuncOp func, ArrayRef<Operation *> group,
            const llvm::DenseMap<Value, Operation *> &counted,
            std::optional<int64_t> stage) {
    Block &body = func.getBody().front();
    Operation *last = nullptr;
    Type accumulate = Float32Type::get(func.getContext());
    for (Operation *update : group) {
      Value grad = update->getOperand(kGradOperand);
      if (Operation *def = grad.getDefiningOp())
        if (!last || last->isBeforeInBlock(def))
          last = def;
      if (cast<RankedTensorType>(grad.getType()).getElementType().isF64())
        accumulate = Float64Type::get(func.getContext());
    }
    OpBuilder b(func.getContext());
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(&body);
    Location loc = func.getLoc();
    auto place = [&](Operation *op) -> Value {
      TaskFields task;
      task.kind = TaskKind::Update;
      task.stage = stage;
      setTask(op, task);
      return op->getResult(0);
    };
    auto scalar = [&](double value, Type element) {
      return place(scalarConstant(b, loc, element, value).getDefiningOp());
    };
    auto as = [&](Value v, Type element) -> Value {
      if (cast<RankedTensorType>(v.getType()).getElementType() == element)
        return v;
      return place(CastOp::create(b, loc, v, element, /*nearest_even=*/true));
    };
    // This rank's sum of squares, each gradient weighted by 1 / its copies.
    Value total;
    for (Operation *update : group) {
      if (counted.lookup(update->getOperand(kParamOperand)) != update)
        continue;
      Value grad = as(update->getOperand(kGradOperand), accumulate);
      int64_t rank = cast<RankedTensorType>(grad.getType()).getRank();
      Value squares = place(MulOp::create(b, loc, grad, grad));
      Value sum = place(ReduceSumOp::create(
          b, loc, squares, llvm::to_vector(llvm::seq<int64_t>(0, rank)),
          /*keepdims=*/false));
      if (double n = copies(func, update); n != 1)
        sum = place(MulOp::create(b, loc, sum, scalar(1.0 / n, accumulate)));
      total = total ? place(AddOp::create(b, loc, total, sum)) : sum;
    }
    if (!total)
      total = scalar(0, accumulate);
    for (StringRef axis : {"data", "tensor", "pipeline"})
      if (mesh_ && mesh_->sizeOf(axis) > 1)
        total = place(shard::AllReduceOp::create(
            b, loc, total, kMeshSymbol,
            ArrayRef<shard::GridAxis>{shard::GridAxis(mesh_->axisIndex(axis))},
            shard::ReductionKind::Sum));
    // torch's clip_coef = max_norm / (total_norm + 1e-6), clamped to 1.
    Value norm = place(SqrtOp::create(b, loc, total));
    Value denominator =
        place(AddOp::create(b, loc, norm, scalar(1e-6, accumulate)));
    Value coef =
        place(DivOp::create(b, loc, scalar(maxNorm, accumulate), denominator));
    coef = place(MinOp::create(b, loc, coef, scalar(1.0, accumulate)));
    Operation *after = coef.getDefiningOp();
    for (Operation *update : group) {
      Value grad = update->getOperand(kGradOperand);
      Value scale =
          as(coef, cast<RankedTensorType>(grad.getType()).getElementType());
      Value clipped = place(MulOp::create(b, loc, grad, scale));
      update->setOperand(kGradOperand, clipped);
      after = clipped.getDefiningOp();
    }
    sinkAfter(after, group);
  }

  std::optional<DeviceMesh> mesh_, zeroMesh_;
};

} // namespace
