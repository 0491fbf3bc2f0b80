//===- FoldGemmGelu.cpp - weft-fold-gemm-gelu -----------------------------===//
//
// A transformer MLP's first Linear layer writes the GELU's input, which the
// GELU reads straight back; in the backward, the second layer's input
// gradient GEMM writes the GELU's output gradient, which the GELU's
// gradient reads straight back. cuBLASLt applies the tanh GELU, and its
// derivative, in the GEMM's epilogue (as Transformer Engine's and
// Megatron-LM's fused bias-GELU do): weft.gemm_gelu_tanh and
// weft.gemm_gelu_tanh_grad. Only the tanh form: cuBLASLt has no erf GELU.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace weft {
#define GEN_PASS_DEF_FOLDGEMMGELU
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The gemm whose result `v` is, directly or through one reshape that
/// nothing else reads (a Linear layer's [B S, N] output seen as [B, S,
/// N]), when `user` is its only other reader and has its bookkeeping
/// (its `weft.task`); null otherwise. `onlyUse`: the
/// gemm's result may have no reader but that path.
GemmOp gemmOf(Value v, Operation *user, bool onlyUse) {
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (reshape && reshape->getBlock() == user->getBlock() &&
      (!onlyUse || v.hasOneUse()))
    v = reshape.getInput();
  auto gemm = v.getDefiningOp<GemmOp>();
  if (!gemm || gemm->getBlock() != user->getBlock() ||
      !isa<FloatType>(getElementTypeOrSelf(gemm.getType())) ||
      gemm->getDiscardableAttrDictionary() !=
          user->getDiscardableAttrDictionary() ||
      (onlyUse && !gemm->hasOneUse()))
    return {};
  return gemm;
}

/// gelu_tanh(gemm(..)): one gemm_gelu_tanh at the gemm's place, whose
/// pre-activation every other reader of the gemm's result reads.
bool foldForward(GeluTanhOp gelu) {
  GemmOp gemm = gemmOf(gelu.getInput(), gelu, /*onlyUse=*/false);
  if (!gemm)
    return false;
  OpBuilder b(gemm);
  auto fused = GemmGeluTanhOp::create(
      b, gelu.getLoc(), gemm.getA(), gemm.getB(), gemm.getC(),
      gemm.getAlphaAttr(), gemm.getBetaAttr(), gemm.getTransAAttr(),
      gemm.getTransBAttr());
  fused->setDiscardableAttrs(gemm->getDiscardableAttrDictionary());
  gelu.getResult().replaceAllUsesWith(
      viewAs(b, fused.getOutput(), gelu.getType(), gemm));
  gelu.erase();
  gemm.getResult().replaceAllUsesWith(fused.getPreActivation());
  gemm.erase();
  return true;
}

/// gelu_tanh_grad(x, gemm(..)) with the gemm's result read only there: one
/// gemm_gelu_tanh_grad at the gradient's place.
bool foldBackward(GeluTanhGradOp grad) {
  GemmOp gemm = gemmOf(grad.getGrad(), grad, /*onlyUse=*/true);
  if (!gemm || gemm.getC())
    return false;
  OpBuilder b(grad);
  Value pre = grad.getInput();
  if (auto reshape = pre.getDefiningOp<ReshapeOp>();
      reshape && reshape.getInput().getType() == gemm.getType())
    pre = reshape.getInput();
  pre = viewAs(b, pre, gemm.getType(), grad);
  auto fused = GemmGeluTanhGradOp::create(
      b, grad.getLoc(), gemm.getA(), gemm.getB(), pre, gemm.getAlphaAttr(),
      gemm.getTransAAttr(), gemm.getTransBAttr());
  fused->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
  grad.getResult().replaceAllUsesWith(
      viewAs(b, fused.getResult(), grad.getType(), grad));
  Operation *reshape = grad.getGrad().getDefiningOp<ReshapeOp>();
  grad.erase();
  if (reshape)
    reshape->erase();
  gemm.erase();
  return true;
}

struct FoldGemmGeluPass : weft::impl::FoldGemmGeluBase<FoldGemmGeluPass> {
  void runOnOperation() override {
    SmallVector<GeluTanhOp> gelus;
    SmallVector<GeluTanhGradOp> grads;
    getOperation().walk([&](Operation *op) {
      if (auto gelu = dyn_cast<GeluTanhOp>(op))
        gelus.push_back(gelu);
      else if (auto grad = dyn_cast<GeluTanhGradOp>(op))
        grads.push_back(grad);
    });
    for (GeluTanhOp gelu : gelus)
      foldForward(gelu);
    for (GeluTanhGradOp grad : grads)
      foldBackward(grad);
  }
};

} // namespace
