//===- FuseRmsNorm.cpp - weft-fuse-rms-norm: RMSNorm chains into one op ---===//
//
// ONNX before opset 23 has no RMSNormalization, so exporters write Llama's
// RMSNorm as a chain: x * rsqrt(mean(x^2) + eps) * w, spelled as Hugging
// Face's LlamaRMSNorm, torch.nn.RMSNorm or a user wrote it (pow(x, 2) or
// x * x, rsqrt as 1 / sqrt, reciprocal(sqrt) or pow(., -0.5), x / sqrt(.),
// the weight on either side). Matching spellings one by one misses the
// next one, so the pass reads the chain above each reduce_mean as a
// product of powers of its leaves (mul, div, sqrt, reciprocal and pow by a
// constant exponent, descending only into values the chain alone uses)
// and compares the exponents with RMSNorm's:
//
//   x^1 * z^(-1/2) * w^1,  z = reduce_mean(x^2 over the trailing dims)
//                              + eps (a constant >= 0, or none),
//
// the constant factor 1 within the rounding of the constants' dtype, w
// the normalised dims' shape. Differentiated as it stands, the chain keeps
// x, x^2's mean path and two products of x's size for the backward;
// weft.rms_norm keeps x and one f32 per row.
//
//===----------------------------------------------------------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <optional>

namespace weft {
#define GEN_PASS_DEF_FUSERMSNORM
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

/// A scalar or splat float constant's value (upstream's m_ConstantFloat).
std::optional<double> splat(Value v) {
  APFloat value(0.0);
  if (!matchPattern(v, m_ConstantFloat(&value)))
    return std::nullopt;
  return value.convertToDouble();
}

/// A value read as c * prod(leaf^power): the ops read (to erase with the
/// root) and the constants.
struct Product {
  double coefficient = 1.0;
  llvm::MapVector<Value, double> powers;
  llvm::SetVector<Operation *> ops, constants;
  /// Leaves reached through a non-integer power (sqrt, pow(., 0.5)):
  /// sqrt(x * x) is |x|, not x, so only z, the non-negative mean of
  /// squares plus eps, may be one.
  llvm::DenseSet<Value> fractional;
};

/// Multiplies `p` by v^exponent. Descends into mul, div, sqrt, reciprocal
/// and pow by a constant when `inside` (v is used by the chain alone);
/// anything else is a leaf.
void read(Value v, double exponent, bool inside, Product &p,
          bool fractional = false) {
  if (std::optional<double> c = splat(v)) {
    p.coefficient *= std::pow(*c, exponent);
    p.constants.insert(v.getDefiningOp());
    return;
  }
  Operation *def = v.getDefiningOp();
  if (!def || !inside || !isa<MulOp, DivOp, SqrtOp, ReciprocalOp, PowOp>(def) ||
      (isa<PowOp>(def) && !splat(def->getOperand(1)))) {
    p.powers[v] += exponent;
    if (fractional)
      p.fractional.insert(v);
    return;
  }
  p.ops.insert(def);
  // Operand i to the power `factor` (the op's own: sqrt's 1/2, pow's c).
  auto operand = [&](unsigned i, double factor) {
    Value x = def->getOperand(i);
    read(x, exponent * factor, x.hasOneUse(), p,
         fractional || std::trunc(factor) != factor);
  };
  if (isa<MulOp>(def)) {
    operand(0, 1);
    operand(1, 1);
  } else if (isa<DivOp>(def)) {
    operand(0, 1);
    operand(1, -1);
  } else if (isa<SqrtOp>(def)) {
    operand(0, 0.5);
  } else if (isa<ReciprocalOp>(def)) {
    operand(0, -1);
  } else {
    p.constants.insert(def->getOperand(1).getDefiningOp());
    operand(0, *splat(def->getOperand(1)));
  }
}

bool near(double a, double b, double tolerance) {
  return std::abs(a - b) <= tolerance * std::max(1.0, std::abs(b));
}

/// Relative tolerance of the constant factor: the chains' constants (1,
/// 2, -0.5) are exact in every float type, so 8 units of f32's rounding;
/// a real scale, even one a 16-bit literal rounds near 1, is not dropped.
constexpr double kTolerance = 8 * 0x1p-24;

struct RmsNormChain {
  Value x, scale;
  int64_t axis;
  double epsilon;
  Operation *root;
  llvm::SetVector<Operation *> ops, constants;
};

/// The RMSNorm whose mean of squares is `mean`, with the chain's root at
/// `root`, if the product read at `root` is one.
std::optional<RmsNormChain> matchAt(ReduceMeanOp mean, Operation *root) {
  auto type = dyn_cast<RankedTensorType>(mean.getInput().getType());
  if (!type || !isa<FloatType>(type.getElementType()) || !mean.getKeepdims())
    return std::nullopt;
  // The mean over the trailing dims [axis, rank).
  int64_t rank = type.getRank();
  ArrayRef<int64_t> axes = mean.getAxes();
  if (axes.empty() || axes.back() != rank - 1)
    return std::nullopt;
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1)
      return std::nullopt;
  double tolerance = kTolerance;
  // Its input: x^2.
  Product squares;
  read(mean.getInput(), 1.0, mean.getInput().hasOneUse(), squares);
  if (squares.powers.size() != 1 || !near(squares.coefficient, 1, tolerance) ||
      squares.powers.front().second != 2.0 || !squares.fractional.empty())
    return std::nullopt;
  Value x = squares.powers.front().first;
  if (x.getType() != type)
    return std::nullopt;
  // z = mean + eps, or the mean itself.
  Value z = mean.getResult();
  double eps = 0;
  Operation *add = nullptr;
  if (mean->hasOneUse())
    if (auto sum = dyn_cast<AddOp>(*mean->getUsers().begin())) {
      Value other = sum.getLhs() == z ? sum.getRhs() : sum.getLhs();
      std::optional<double> c = splat(other);
      if (!c || *c < 0)
        return std::nullopt;
      eps = *c;
      add = sum;
      z = sum.getResult();
    }
  if (!z.hasOneUse() || root->getResult(0).getType() != type)
    return std::nullopt;
  Product product;
  read(root->getResult(0), 1.0, true, product);
  if (!near(product.coefficient, 1, tolerance) || product.powers.size() != 3 ||
      product.powers.lookup(x) != 1.0 || product.powers.lookup(z) != -0.5)
    return std::nullopt;
  Value scale;
  for (auto &[leaf, power] : product.powers)
    if (leaf != x && leaf != z)
      scale = power == 1.0 ? leaf : Value();
  if (product.fractional.contains(x) ||
      (scale && product.fractional.contains(scale)))
    return std::nullopt;
  int64_t axis = axes.front();
  auto scaleType =
      scale ? dyn_cast<RankedTensorType>(scale.getType()) : RankedTensorType();
  if (!scaleType || scaleType.getElementType() != type.getElementType() ||
      scaleType.getShape() != type.getShape().drop_front(axis))
    return std::nullopt;
  RmsNormChain chain{x, scale, axis, eps, root, product.ops, product.constants};
  chain.ops.insert(squares.ops.begin(), squares.ops.end());
  chain.constants.insert(squares.constants.begin(), squares.constants.end());
  chain.ops.insert(mean);
  if (add) {
    chain.ops.insert(add);
    for (Value operand : add->getOperands())
      if (operand != mean.getResult())
        chain.constants.insert(operand.getDefiningOp());
  }
  return chain;
}

/// The chain above `mean`: its single-use users through the ops a chain is
/// read through, tried from the last (the largest product) down.
std::optional<RmsNormChain> match(ReduceMeanOp mean) {
  SmallVector<Operation *> path;
  Value v = mean.getResult();
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (!isa<AddOp, MulOp, DivOp, SqrtOp, ReciprocalOp, PowOp>(user))
      break;
    path.push_back(user);
    v = user->getResult(0);
  }
  for (Operation *root : llvm::reverse(path))
    if (isa<MulOp, DivOp>(root))
      if (std::optional<RmsNormChain> chain = matchAt(mean, root))
        return chain;
  return std::nullopt;
}

struct FuseRmsNormPass : weft::impl::FuseRmsNormBase<FuseRmsNormPass> {
  void runOnOperation() override {
    SmallVector<ReduceMeanOp> means;
    getOperation().walk([&](ReduceMeanOp op) { means.push_back(op); });
    for (ReduceMeanOp mean : means) {
      std::optional<RmsNormChain> chain = match(mean);
      if (!chain)
        continue;
      Operation *root = chain->root;
      OpBuilder b(root);
      auto norm = RmsNormOp::create(b, root->getLoc(), chain->x, chain->scale,
                                    b.getI64IntegerAttr(chain->axis),
                                    b.getF64FloatAttr(chain->epsilon));
      root->getResult(0).replaceAllUsesWith(norm.getOutput());
      // Every op read was used inside the chain alone: users before
      // producers.
      SmallVector<Operation *> dead(chain->ops.begin(), chain->ops.end());
      dead.push_back(root);
      llvm::sort(dead, [](Operation *a, Operation *b) {
        return b->isBeforeInBlock(a);
      });
      for (Operation *op : llvm::make_range(dead.begin(), llvm::unique(dead)))
        op->erase();
      for (Operation *op : chain->constants)
        if (op->use_empty())
          op->erase();
    }
  }
};

} // namespace
