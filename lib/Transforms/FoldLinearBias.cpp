//===- FoldLinearBias.cpp - weft-fold-linear-bias -------------------------===//
//
// torch.nn.Linear's bias is an add after the product: a pass over the
// activations reading the product and writing the sum. ONNX Gemm's C
// broadcasts a [N] vector over the rows, and cuBLASLt adds it in the
// GEMM's epilogue (CUBLASLT_EPILOGUE_BIAS) before the one rounding of the
// output, so the add, and its read and write of the activations, go.
// Runs after weft-fold-weight-transpose, whose gemms it extends.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

namespace weft {
#define GEN_PASS_DEF_FOLDLINEARBIAS
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// A linear layer's product: a gemm without C, alone or viewed through one
/// reshape, read only by the add.
struct Product {
  GemmOp gemm;
  ReshapeOp view; // null: the gemm's own result
};

std::optional<Product> productOf(Value v) {
  if (!v.hasOneUse())
    return std::nullopt;
  Product p;
  if ((p.view = v.getDefiningOp<ReshapeOp>())) {
    v = p.view.getInput();
    if (!v.hasOneUse())
      return std::nullopt;
  }
  p.gemm = v.getDefiningOp<GemmOp>();
  if (!p.gemm || p.gemm.getC())
    return std::nullopt;
  return p;
}

/// A bias for `p`: a vector of the gemm's columns, of its dtype.
bool isBias(Value bias, Product p) {
  auto type = cast<RankedTensorType>(bias.getType());
  RankedTensorType y = p.gemm.getType();
  return type.getRank() == 1 && type.getDimSize(0) == y.getDimSize(1) &&
         type.getElementType() == y.getElementType();
}

void fold(AddOp add, Value bias, Product p) {
  OpBuilder b(add);
  GemmOp old = p.gemm;
  Value sum = GemmOp::create(b, old.getLoc(), old.getA(), old.getB(), bias,
                             old.getAlphaAttr(), b.getF64FloatAttr(1.0),
                             old.getTransAAttr(), old.getTransBAttr());
  if (p.view)
    sum = ReshapeOp::create(b, p.view.getLoc(), sum,
                            p.view.getType().getShape());
  add.getResult().replaceAllUsesWith(sum);
  add.erase();
  if (p.view)
    p.view.erase();
  old.erase();
}

struct FoldLinearBiasPass
    : weft::impl::FoldLinearBiasBase<FoldLinearBiasPass> {
  void runOnOperation() override {
    SmallVector<AddOp> adds;
    getOperation().walk([&](AddOp op) { adds.push_back(op); });
    for (AddOp add : adds)
      for (auto [x, bias] : {std::pair{add.getLhs(), add.getRhs()},
                             {add.getRhs(), add.getLhs()}}) {
        std::optional<Product> p = productOf(x);
        // The sum must have the product's shape: the bias broadcasts into
        // it, not the other way round.
        if (p && isBias(bias, *p) && add.getType() == x.getType()) {
          fold(add, bias, *p);
          break;
        }
      }
  }
};

} // namespace
