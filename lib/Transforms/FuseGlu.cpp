//===- FuseGlu.cpp - weft-fuse-glu: gated MLP activations into one op -----===//
//
// Llama's MLP is down(silu(gate(x)) * up(x)) (SwiGLU), Gemma's
// gelu(gate(x)) * up(x) (GeGLU; Shazeer 2020). Exporters write silu as
// g * sigmoid(g) (ONNX before opset 22 has no Silu) and GELU as a chain
// weft-fuse-gelu has already made one weft.gelu or weft.gelu_tanh. The
// product of such an activation (used by the product alone) and a value of
// the same type becomes one weft.glu, whose backward keeps gate and up:
// the unfused SwiGLU keeps g, sigmoid(g) and silu(g) besides up.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

#include <optional>

namespace weft {
#define GEN_PASS_DEF_FUSEGLU
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// An activation's input and the ops computing it from there.
struct Activation {
  Value gate;
  StringRef name;
  SmallVector<Operation *> ops;
};

/// `v` as act(g), when only its one user reads it (and its parts).
std::optional<Activation> activationOf(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def || !v.hasOneUse())
    return std::nullopt;
  if (auto gelu = dyn_cast<GeluOp>(def))
    return Activation{gelu.getInput(), "gelu", {def}};
  if (auto gelu = dyn_cast<GeluTanhOp>(def))
    return Activation{gelu.getInput(), "gelu_tanh", {def}};
  // silu: g * sigmoid(g), either order.
  auto mul = dyn_cast<MulOp>(def);
  if (!mul || mul.getLhs().getType() != mul.getType() ||
      mul.getRhs().getType() != mul.getType())
    return std::nullopt;
  for (auto [g, s] : {std::pair{mul.getLhs(), mul.getRhs()},
                      std::pair{mul.getRhs(), mul.getLhs()}}) {
    auto sigmoid = s.getDefiningOp<SigmoidOp>();
    if (sigmoid && sigmoid.getInput() == g && s.hasOneUse())
      return Activation{g, "silu", {def, sigmoid}};
  }
  return std::nullopt;
}

struct FuseGluPass : weft::impl::FuseGluBase<FuseGluPass> {
  void runOnOperation() override {
    SmallVector<MulOp> products;
    getOperation().walk([&](MulOp op) { products.push_back(op); });
    DenseSet<Operation *> erased;
    for (MulOp product : products) {
      if (erased.contains(product))
        continue;
      // No broadcasting: gate and up are the two projections' outputs.
      Type type = product.getType();
      if (product.getLhs().getType() != type ||
          product.getRhs().getType() != type ||
          !isa<FloatType>(getElementTypeOrSelf(type)))
        continue;
      for (unsigned i : {0u, 1u}) {
        std::optional<Activation> act = activationOf(product->getOperand(i));
        if (!act)
          continue;
        OpBuilder b(product);
        auto glu = GluOp::create(b, product.getLoc(), act->gate,
                                 product->getOperand(1 - i),
                                 b.getStringAttr(act->name));
        product.replaceAllUsesWith(glu.getOutput());
        product.erase();
        for (Operation *op : act->ops) {
          erased.insert(op);
          op->erase();
        }
        break;
      }
    }
  }
};

} // namespace
