//===- FuseGelu.cpp - weft-fuse-gelu: the erf chain into weft.gelu --------===//
//
// ONNX before opset 20 has no Gelu, so torch.nn.functional.gelu exports as
// x * (1 + erf(x / sqrt(2))) * 0.5. Differentiated as it stands, the chain
// keeps four activations for the backward (x, x / sqrt(2), 1 + erf(..), and
// the product); weft.gelu keeps x alone, which is what Megatron-LM's
// activation-memory formula assumes (Korthikanti et al. 2022, §4.1).
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <optional>

namespace weft {
#define GEN_PASS_DEF_FUSEGELU
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// The value of a scalar or splat float constant.
std::optional<double> splatValue(Value v) {
  ElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

bool isConstant(Value v, double expected) {
  std::optional<double> value = splatValue(v);
  // The exporters write sqrt(2) and 1/sqrt(2) as f32 literals.
  return value && std::abs(*value - expected) <= 1e-6 * std::abs(expected);
}

/// The only user of `v`, if it has exactly one use.
Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// For a binary op with `known` as one operand, the other operand.
Value otherOperand(Operation *op, Value known) {
  if (op->getNumOperands() != 2)
    return {};
  return op->getOperand(0) == known ? op->getOperand(1) : op->getOperand(0);
}

/// `t` is x / sqrt(2) or x * (1/sqrt(2)) (either operand order): x, or null.
Value erfArgumentSource(Value t) {
  if (auto div = t.getDefiningOp<DivOp>())
    return isConstant(div.getRhs(), M_SQRT2) ? div.getLhs() : Value();
  if (auto mul = t.getDefiningOp<MulOp>()) {
    if (isConstant(mul.getRhs(), M_SQRT1_2))
      return mul.getLhs();
    if (isConstant(mul.getLhs(), M_SQRT1_2))
      return mul.getRhs();
  }
  return {};
}

/// Matches the GELU chain around `erf`. Returns its root (the op computing
/// the GELU) and sets `x`, or returns null. Accepted products, with every
/// intermediate used once and either operand order:
///   (x * (1 + erf(t))) * 0.5   (torch.nn.functional.gelu)
///   (x * 0.5) * (1 + erf(t))   (the BERT / Hugging Face spelling)
/// with t = x / sqrt(2) or x * (1 / sqrt(2)).
Operation *matchGelu(ErfOp erf, Value &x) {
  x = erfArgumentSource(erf.getInput());
  if (!x || !erf.getInput().hasOneUse())
    return nullptr;
  auto plusOne = dyn_cast_or_null<AddOp>(soleUser(erf.getResult()));
  if (!plusOne || !isConstant(otherOperand(plusOne, erf.getResult()), 1.0))
    return nullptr;
  auto outer = dyn_cast_or_null<MulOp>(soleUser(plusOne.getResult()));
  if (!outer)
    return nullptr;
  Value partner = otherOperand(outer, plusOne.getResult());
  if (partner == x) {
    // (x * (1 + erf)) * 0.5
    auto half = dyn_cast_or_null<MulOp>(soleUser(outer.getResult()));
    if (!half || !isConstant(otherOperand(half, outer.getResult()), 0.5))
      return nullptr;
    return half;
  }
  // (x * 0.5) * (1 + erf)
  auto scaled = partner.getDefiningOp<MulOp>();
  if (!scaled || !partner.hasOneUse() ||
      (scaled.getLhs() != x && scaled.getRhs() != x) ||
      !isConstant(otherOperand(scaled, x), 0.5))
    return nullptr;
  return outer;
}

struct FuseGeluPass : weft::impl::FuseGeluBase<FuseGeluPass> {
  void runOnOperation() override {
    SmallVector<ErfOp> erfs;
    getOperation().walk([&](ErfOp erf) { erfs.push_back(erf); });
    for (ErfOp erf : erfs) {
      Value x;
      Operation *root = matchGelu(erf, x);
      // The GELU must have x's type: no broadcasting hides in the chain.
      if (!root || root->getResult(0).getType() != x.getType())
        continue;
      OpBuilder b(root);
      Value gelu = GeluOp::create(b, root->getLoc(), x.getType(), x);
      root->getResult(0).replaceAllUsesWith(gelu);
      // The chain is now dead. Erase it from the root up (an op joins once
      // all its users have), then the constants nothing else uses.
      SmallVector<Operation *> dead = {root};
      llvm::SetVector<Operation *> constants;
      for (size_t i = 0; i < dead.size(); ++i)
        for (Value operand : dead[i]->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (!def || operand == x || llvm::is_contained(dead, def))
            continue;
          if (isa<ConstantOp>(def))
            constants.insert(def);
          else if (llvm::all_of(def->getUsers(), [&](Operation *user) {
                     return llvm::is_contained(dead, user);
                   }))
            dead.push_back(def);
        }
      for (Operation *op : dead)
        op->erase();
      for (Operation *op : constants)
        if (op->use_empty())
          op->erase();
    }
  }
};

} // namespace
