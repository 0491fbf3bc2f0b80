//===- Gradients.cpp - GradientOpInterface: reverse-mode derivative rules -===//
//
// Each rule emits, at the builder's insertion point, the gradient of every
// operand from the gradients of the results (null = zero). Derivatives are
// the textbook ones (and torch's autograd formulas, which the tests compare
// against); broadcasting is undone by summing over the broadcast dims.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace weft;

#include "GradientUtils.h"

using namespace weft::grad;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult SqrtOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    return div(b, loc, dy, mul(b, loc, getResult(), scalar(b, loc, dy, 2)));
  });
}

LogicalResult ReciprocalOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    Value y = getResult();
    return neg(b, loc, mul(b, loc, dy, mul(b, loc, y, y)));
  });
}

LogicalResult NegOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs,
                   [&](Value dy) { return neg(b, getLoc(), dy); });
}

LogicalResult ExpOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs,
                   [&](Value dy) { return mul(b, getLoc(), dy, getResult()); });
}

LogicalResult LogOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs,
                   [&](Value dy) { return div(b, getLoc(), dy, getInput()); });
}

LogicalResult SinOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    Value x = getInput();
    return mul(b, getLoc(), dy, CosOp::create(b, getLoc(), x.getType(), x));
  });
}

LogicalResult CosOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    Value x = getInput();
    Value sin = SinOp::create(b, getLoc(), x.getType(), x);
    return neg(b, getLoc(), mul(b, getLoc(), dy, sin));
  });
}

LogicalResult ErfOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  // d erf(x) = 2/sqrt(pi) * exp(-x^2)
  Location loc = getLoc();
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    Value x = getInput();
    Value gauss =
        ExpOp::create(b, loc, x.getType(), neg(b, loc, mul(b, loc, x, x)));
    return mul(b, loc, dy,
               mul(b, loc, gauss, scalar(b, loc, dy, 2.0 / std::sqrt(M_PI))));
  });
}

LogicalResult TanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    Value y = getResult();
    return mul(b, loc, dy,
               sub(b, loc, scalar(b, loc, dy, 1), mul(b, loc, y, y)));
  });
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    return GeluGradOp::create(b, getLoc(), dy.getType(), getInput(), dy);
  });
}

LogicalResult GeluTanhOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    return GeluTanhGradOp::create(b, getLoc(), dy.getType(), getInput(), dy);
  });
}

LogicalResult GluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  auto grad = GluGradOp::create(b, getLoc(), getGate(), getUp(), dys[0],
                                getActivationAttr());
  dxs[0] = grad.getGateGrad();
  dxs[1] = grad.getUpGrad();
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    return ReluGradOp::create(b, getLoc(), dy.getType(), getInput(), dy);
  });
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    Value y = getResult();
    return mul(b, loc, dy,
               mul(b, loc, y, sub(b, loc, scalar(b, loc, dy, 1), y)));
  });
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  auto id = [](Value dy) { return dy; };
  return binaryGrad(*this, b, dys, dxs, id, id);
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return binaryGrad(
      *this, b, dys, dxs, [](Value dy) { return dy; },
      [&](Value dy) { return neg(b, getLoc(), dy); });
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  return binaryGrad(
      *this, b, dys, dxs, [&](Value dy) { return mul(b, loc, dy, getRhs()); },
      [&](Value dy) { return mul(b, loc, dy, getLhs()); });
}

LogicalResult DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  // y = a / b: da = dy / b, db = -dy * y / b.
  Location loc = getLoc();
  return binaryGrad(
      *this, b, dys, dxs, [&](Value dy) { return div(b, loc, dy, getRhs()); },
      [&](Value dy) {
        return neg(b, loc, div(b, loc, mul(b, loc, dy, getResult()), getRhs()));
      });
}

/// torch.maximum's and torch.minimum's derivative: the gradient goes to the
/// operand the result is, split in half between equal operands.
template <typename OpT>
static LogicalResult extremumGrad(OpT op, OpBuilder &b, ArrayRef<Value> dys,
                                  SmallVectorImpl<Value> &dxs) {
  Location loc = op.getLoc();
  Value lhs = op.getLhs(), rhs = op.getRhs(), y = op.getResult();
  auto share = [&](Value operand) {
    return [&b, loc, lhs, rhs, y, operand](Value dy) {
      Value tie = EqualOp::create(b, loc, lhs, rhs);
      Value half = mul(b, loc, dy, scalar(b, loc, dy, 0.5));
      Value picked = EqualOp::create(b, loc, y, operand);
      return WhereOp::create(b, loc, picked,
                             WhereOp::create(b, loc, tie, half, dy),
                             scalar(b, loc, dy, 0));
    };
  };
  return binaryGrad(op, b, dys, dxs, share(lhs), share(rhs));
}

LogicalResult MaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return extremumGrad(*this, b, dys, dxs);
}

LogicalResult MinOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return extremumGrad(*this, b, dys, dxs);
}

LogicalResult PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  // y = a^e: da = dy * e * a^(e-1), de = dy * y * log(a).
  Location loc = getLoc();
  Value a = getLhs(), e = getRhs();
  return binaryGrad(
      *this, b, dys, dxs,
      [&](Value dy) {
        Value em1 = sub(b, loc, e, scalar(b, loc, e, 1));
        return mul(b, loc, dy, mul(b, loc, e, PowOp::create(b, loc, a, em1)));
      },
      [&](Value dy) {
        Value loga = LogOp::create(b, loc, a.getType(), a);
        return mul(b, loc, dy, mul(b, loc, getResult(), loga));
      });
}

LogicalResult EqualOp::buildGradients(OpBuilder &, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  prepare(*this, dys, dxs); // a comparison has no derivative
  return success();
}

LogicalResult CumSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  // dx_j = sum of dy_i over the i whose sum includes x_j: the cumulative
  // sum of dy the other way, as exclusive as the forward.
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    return CumSumOp::create(b, getLoc(), dy, b.getI64IntegerAttr(getAxis()),
                            b.getBoolAttr(getExclusive()),
                            b.getBoolAttr(!getReverse()))
        .getResult();
  });
}

// Comparisons, logic and float tests have no derivative: their operands
// get none through them.
LogicalResult CompareOp::buildGradients(OpBuilder &, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  prepare(*this, dys, dxs);
  return success();
}

LogicalResult LogicalOp::buildGradients(OpBuilder &, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  prepare(*this, dys, dxs);
  return success();
}

LogicalResult NotOp::buildGradients(OpBuilder &, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  prepare(*this, dys, dxs);
  return success();
}

LogicalResult IsNaNOp::buildGradients(OpBuilder &, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  prepare(*this, dys, dxs);
  return success();
}

LogicalResult IsInfOp::buildGradients(OpBuilder &, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  prepare(*this, dys, dxs);
  return success();
}

LogicalResult WhereOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  if (!prepare(*this, dys, dxs))
    return success();
  Location loc = getLoc();
  Value dy = dys[0], zero = scalar(b, loc, dy, 0);
  if (isFloat(getX()))
    dxs[1] =
        unbroadcast(b, loc, WhereOp::create(b, loc, getCondition(), dy, zero),
                    typeOf(getX()));
  if (isFloat(getY()))
    dxs[2] =
        unbroadcast(b, loc, WhereOp::create(b, loc, getCondition(), zero, dy),
                    typeOf(getY()));
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  if (prepare(*this, dys, dxs) && isFloat(getInput()) && isFloat(getResult()))
    // torch's autograd rounds a gradient it narrows (ToCopyBackward).
    dxs[0] =
        CastOp::create(b, getLoc(), dys[0], typeOf(getInput()).getElementType(),
                       /*nearest_even=*/true);
  return success();
}

LogicalResult ClipOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    return ClipGradOp::create(b, getLoc(), dy.getType(), getInput(), dy,
                              getMinAttr(), getMaxAttr());
  });
}

LogicalResult TriluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  // A mask: the gradient is the same triangle of dy.
  return unaryGrad(*this, dys, dxs, [&](Value dy) {
    return TriluOp::create(b, getLoc(), dy.getType(), dy, getUpperAttr(),
                           getKAttr());
  });
}
