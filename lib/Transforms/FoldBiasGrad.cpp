//===- FoldBiasGrad.cpp - weft-fold-bias-grad -----------------------------===//
//
// A Linear layer's backward reads its output gradient dY [M, N] three
// times: the input gradient's GEMM, the weight gradient's (dY^T X, or X^T
// dY for a layer computing x W) and the bias gradient's column sums
// (reduce_sum over rows). The last two become
// one weft.wgrad_bias, which a GPU runs as one cuBLASLt GEMM whose
// epilogue sums the bias gradient from the dY it reads anyway
// (CUBLASLT_EPILOGUE_BGRADB): one read of dY and one launch fewer per
// Linear layer.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Transforms/FuncUtils.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"

namespace weft {
#define GEN_PASS_DEF_FOLDBIASGRAD
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The weight gradient beside `sums`, a reduce_sum of dY [M, N] over its
/// rows, in its block: gemm(dY, X) (a Linear layer's dY^T X) or gemm(X,
/// dY) (an `x W` layer's X^T dY), with transA alone, no C, alpha 1. Null
/// when there is none.
GemmOp weightGradOf(ReduceSumOp sums, DominanceInfo &dominance) {
  Value dy = sums.getInput();
  auto type = cast<RankedTensorType>(dy.getType());
  if (type.getRank() != 2 || sums.getAxes() != ArrayRef<int64_t>{0})
    return {};
  for (Operation *user : dy.getUsers()) {
    auto gemm = dyn_cast<GemmOp>(user);
    if (!gemm || !gemm.getTransA() || gemm.getTransB() || gemm.getC() ||
        !gemm.getAlpha().isExactlyValue(1.0) ||
        gemm->getBlock() != sums->getBlock())
      continue;
    Value x = gemm.getA() == dy ? gemm.getB() : gemm.getA();
    if (x != dy && cast<RankedTensorType>(x.getType()).getRank() == 2 &&
        dominance.properlyDominates(x, sums))
      return gemm;
  }
  return {};
}

void fold(ReduceSumOp sums, GemmOp gemm) {
  // Before the earlier of the two: dY and X come before both, and each
  // result's readers after its op.
  Operation *first = gemm->isBeforeInBlock(sums) ? gemm : sums;
  OpBuilder b(first);
  Value dy = sums.getInput();
  bool transposed = gemm.getB() == dy;
  auto fused = WgradBiasOp::create(b, gemm.getLoc(), dy,
                                   transposed ? gemm.getA() : gemm.getB(),
                                   /*accumulate=*/ValueRange(), transposed);
  // Backward bookkeeping (phase, stage) carries over, to the reshape too.
  fused->setDiscardableAttrs(gemm->getDiscardableAttrDictionary());
  gemm.getResult().replaceAllUsesWith(fused.getWeightGrad());
  sums.getResult().replaceAllUsesWith(
      viewAs(b, fused.getBiasGrad(), sums.getType(), gemm));
  gemm.erase();
  sums.erase();
}

struct FoldBiasGradPass : weft::impl::FoldBiasGradBase<FoldBiasGradPass> {
  void runOnOperation() override {
    SmallVector<std::pair<ReduceSumOp, GemmOp>> pairs;
    llvm::DenseSet<Operation *> taken;
    DominanceInfo dominance(getOperation());
    getOperation().walk([&](ReduceSumOp sums) {
      if (GemmOp gemm = weightGradOf(sums, dominance);
          gemm && taken.insert(gemm).second)
        pairs.push_back({sums, gemm});
    });
    for (auto [sums, gemm] : pairs)
      fold(sums, gemm);
  }
};

} // namespace
