//===- FoldWeightTranspose.cpp - weft-fold-weight-transpose ---------------===//
//
// torch.nn.Linear exports as x @ Transpose(W): run as it stands, every step
// copies every weight into its transpose before the product. BLAS (and
// cuBLAS) read a transposed operand for free, so the product becomes one
// gemm with transB on W itself, x's leading dims folded into the rows (a
// reshape is a view). The backward follows: the gemm's gradient rule reads
// W and writes dW directly, as the matmul rule already did for this
// pattern (GradientsNN.cpp).
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_FOLDWEIGHTTRANSPOSE
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// `x @ transpose(w, [1, 0])` with a 2-D `w` and x of rank >= 2: the
/// transpose's input, else null.
Value transposedWeight(MatMulOp matmul) {
  auto transpose = matmul.getRhs().getDefiningOp<TransposeOp>();
  if (!transpose || transpose.getPerm() != ArrayRef<int64_t>{1, 0} ||
      cast<RankedTensorType>(matmul.getLhs().getType()).getRank() < 2 ||
      matmul.getTransA() || matmul.getTransB())
    return Value();
  return transpose.getInput();
}

struct FoldWeightTransposePass
    : weft::impl::FoldWeightTransposeBase<FoldWeightTransposePass> {
  void runOnOperation() override {
    SmallVector<MatMulOp> matmuls;
    getOperation().walk([&](MatMulOp op) { matmuls.push_back(op); });
    for (MatMulOp matmul : matmuls) {
      Value w = transposedWeight(matmul);
      if (!w)
        continue;
      auto transpose = matmul.getRhs().getDefiningOp<TransposeOp>();
      auto x = cast<RankedTensorType>(matmul.getLhs().getType());
      auto y = cast<RankedTensorType>(matmul.getType());
      int64_t k = x.getShape().back();
      OpBuilder b(matmul);
      Location loc = matmul.getLoc();
      Value rows = matmul.getLhs();
      if (x.getRank() != 2)
        rows = ReshapeOp::create(b, loc, rows,
                                 ArrayRef<int64_t>{x.getNumElements() / k, k});
      Value product = GemmOp::create(
          b, loc, rows, w, Value(), b.getF64FloatAttr(1.0),
          b.getF64FloatAttr(0.0), b.getBoolAttr(false), b.getBoolAttr(true));
      if (y.getRank() != 2)
        product = ReshapeOp::create(b, loc, product, y.getShape());
      matmul.getResult().replaceAllUsesWith(product);
      matmul.erase();
      if (transpose->use_empty())
        transpose.erase();
    }
  }
};

} // namespace
