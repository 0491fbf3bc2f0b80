//===- ElementwiseOps.cpp - ONNX elementwise operators -> weft ------------===//
//
// Add/Sub/Mul/Div/Equal/Max/Min/Where/Neg/Cast on constants are folded:
// torch emits them inside shape computations.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

using namespace mlir;
using namespace weft;
using onnx::TensorProto;

namespace {

template <typename OpT>
LogicalResult convertUnary(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  g.bind(node, 0, OpT::create(g.builder(), g.loc(node), x.getType(), x));
  return success();
}

LogicalResult convertNeg(GraphImporter &g, const Node &node) {
  if (g.allConstant(node)) {
    HostTensor out = *g.constant(node, 0);
    for (int64_t k = 0; k < out.size(); ++k)
      out.set(k, -out.getDouble(k));
    g.bind(node, 0, std::move(out));
    return success();
  }
  return convertUnary<NegOp>(g, node);
}

double divide(double a, double b, bool integer) {
  if (!integer)
    return a / b;
  // ONNX integer Div truncates toward zero (C semantics).
  return b == 0 ? 0
                : static_cast<double>(static_cast<int64_t>(a) /
                                      static_cast<int64_t>(b));
}

/// Folds a binary op on constants; returns true when it did.
bool foldBinary(GraphImporter &g, const Node &node, StringRef opType) {
  if (!g.allConstant(node))
    return false;
  const HostTensor &a = *g.constant(node, 0), &b = *g.constant(node, 1);
  bool integer = !a.isFloat();
  std::function<double(double, double)> fn;
  int32_t dtype = a.dtype;
  if (opType == "Add")
    fn = [](double x, double y) { return x + y; };
  else if (opType == "Sub")
    fn = [](double x, double y) { return x - y; };
  else if (opType == "Mul")
    fn = [](double x, double y) { return x * y; };
  else if (opType == "Div")
    fn = [integer](double x, double y) { return divide(x, y, integer); };
  else if (opType == "Equal") {
    fn = [](double x, double y) { return double(x == y); };
    dtype = TensorProto::BOOL;
  } else {
    return false;
  }
  HostTensor out;
  if (!broadcastBinary(a, b, dtype, fn, out))
    return false; // the op's verifier reports the shape error
  g.bind(node, 0, std::move(out));
  return true;
}

template <typename OpT>
LogicalResult convertBinary(GraphImporter &g, const Node &node) {
  if (foldBinary(g, node, node.op_type()))
    return success();
  Value lhs = g.operand(node, 0), rhs = g.operand(node, 1);
  if (!lhs || !rhs)
    return failure();
  return g.bindResults(node, g.build<OpT>(node, lhs, rhs));
}

/// ONNX Max-13/Min-13: any number of operands broadcast together. Folded
/// pairwise when all are constants (shape arithmetic in exported masks),
/// else a chain of weft.max/weft.min; a NaN operand gives NaN either way.
template <typename OpT>
LogicalResult convertExtremum(GraphImporter &g, const Node &node) {
  constexpr bool isMax = std::is_same_v<OpT, MaxOp>;
  if (g.allConstant(node)) {
    auto pick = [](double x, double y) {
      if (std::isnan(x) || std::isnan(y))
        return std::nan("");
      return isMax ? std::max(x, y) : std::min(x, y);
    };
    HostTensor acc = *g.constant(node, 0);
    for (int k = 1; k < node.input_size(); ++k) {
      HostTensor out;
      if (!broadcastBinary(acc, *g.constant(node, k), acc.dtype, pick, out))
        return g.error(node)
               << "operands " << k - 1 << " and " << k << " do not broadcast";
      acc = std::move(out);
    }
    g.bind(node, 0, std::move(acc));
    return success();
  }
  Value acc = g.operand(node, 0);
  if (!acc)
    return failure();
  for (int k = 1; k < node.input_size(); ++k) {
    Value next = g.operand(node, k);
    if (!next)
      return failure();
    Operation *op = g.build<OpT>(node, acc, next);
    if (!op)
      return failure();
    acc = op->getResult(0);
  }
  g.bind(node, 0, acc);
  return success();
}

/// `t` broadcast to `shape` (numpy rules).
HostTensor broadcastTo(const HostTensor &t, ArrayRef<int64_t> shape) {
  HostTensor out;
  broadcastBinary(
      t, HostTensor::zeros(t.dtype, shape), t.dtype,
      [](double x, double) { return x; }, out);
  return out;
}

LogicalResult convertWhere(GraphImporter &g, const Node &node) {
  if (g.allConstant(node)) {
    const HostTensor &c = *g.constant(node, 0), &x = *g.constant(node, 1),
                     &y = *g.constant(node, 2);
    auto xy = broadcastShapes(x.shape, y.shape);
    auto shape = xy ? broadcastShapes(c.shape, *xy) : std::nullopt;
    if (shape) {
      HostTensor bc = broadcastTo(c, *shape), bx = broadcastTo(x, *shape),
                 by = broadcastTo(y, *shape);
      for (int64_t k = 0; k < bx.size(); ++k)
        if (!bc.getInt(k))
          bx.copy(k, by, k);
      g.bind(node, 0, std::move(bx));
      return success();
    }
  }
  Value c = g.operand(node, 0), x = g.operand(node, 1), y = g.operand(node, 2);
  if (!c || !x || !y)
    return failure();
  return g.bindResults(node, g.build<WhereOp>(node, c, x, y));
}

LogicalResult convertClip(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  // Clip-11+: bounds are optional scalar inputs; weft needs them constant.
  std::optional<double> bounds[2];
  for (int i : {1, 2}) {
    if (!g.has(node, i))
      continue;
    const HostTensor *t = g.requireConstant(node, i, i == 1 ? "min" : "max");
    if (!t)
      return failure();
    if (t->size() != 1)
      return g.error(node) << (i == 1 ? "min" : "max") << " must be a scalar";
    bounds[i - 1] = t->getDouble(0);
  }
  auto toAttr = [&](std::optional<double> v) {
    return v ? g.builder().getF64FloatAttr(*v) : FloatAttr();
  };
  g.bind(node, 0,
         ClipOp::create(g.builder(), g.loc(node), x.getType(), x,
                        toAttr(bounds[0]), toAttr(bounds[1])));
  return success();
}

/// clip(alpha * x + beta, 0, 1): ONNX HardSigmoid-6 (alpha 0.2, beta 0.5
/// unless given; torch exports alpha 1/6). Decomposed: weft's clip and its
/// gradient (dy where 0 <= alpha x + beta <= 1) are the rule.
Value hardSigmoid(GraphImporter &g, const Node &node, Value x, double alpha,
                  double beta) {
  OpBuilder &b = g.builder();
  Location loc = g.loc(node);
  auto scalar = [&](double v) -> Value {
    auto type = RankedTensorType::get(
        {}, cast<RankedTensorType>(x.getType()).getElementType());
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(type, b.getFloatAttr(type.getElementType(), v)));
  };
  Value affine = AddOp::create(b, loc, MulOp::create(b, loc, x, scalar(alpha)),
                               scalar(beta));
  return ClipOp::create(b, loc, x.getType(), affine, b.getF64FloatAttr(0),
                        b.getF64FloatAttr(1));
}

LogicalResult convertHardSigmoid(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  double alpha = g.attrFloat(node, "alpha");
  // ONNX float attributes are float32: torch's hardsigmoid (x / 6 + 1/2)
  // arrives as the float32 nearest 1/6, which no short decimal recovers.
  // Read it as 1/6, so that a float64 graph computes what torch does (an
  // f32 graph rounds it back anyway).
  if (static_cast<float>(alpha) == static_cast<float>(1.0 / 6))
    alpha = 1.0 / 6;
  g.bind(node, 0, hardSigmoid(g, node, x, alpha, g.attrFloat(node, "beta")));
  return success();
}

/// x * HardSigmoid(x) with alpha 1/6, beta 1/2: ONNX HardSwish-14
/// (MobileNetV3's activation).
LogicalResult convertHardSwish(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  g.bind(node, 0,
         MulOp::create(g.builder(), g.loc(node), x,
                       hardSigmoid(g, node, x, 1.0 / 6, 0.5)));
  return success();
}

LogicalResult convertCast(GraphImporter &g, const Node &node) {
  int64_t to = g.attrInt(node, "to", 0);
  Type element = toMLIRElementType(to, g.context());
  if (!element)
    return g.error(node) << "unsupported variant: cast to ONNX dtype " << to;
  if (g.allConstant(node)) {
    const HostTensor &in = *g.constant(node, 0);
    HostTensor out = HostTensor::zeros(to, in.shape);
    for (int64_t k = 0; k < in.size(); ++k)
      out.set(k, out.isFloat() ? in.getDouble(k) : std::trunc(in.getDouble(k)));
    g.bind(node, 0, std::move(out));
    return success();
  }
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(node, g.build<CastOp>(node, x, element));
}

} // namespace

void weft::registerElementwiseConverters(ConverterMap &map) {
  map["Sqrt"] = convertUnary<SqrtOp>;
  map["Reciprocal"] = convertUnary<ReciprocalOp>;
  map["Neg"] = convertNeg;
  map["Exp"] = convertUnary<ExpOp>;
  map["Log"] = convertUnary<LogOp>;
  map["Erf"] = convertUnary<ErfOp>;
  map["Tanh"] = convertUnary<TanhOp>;
  map["Relu"] = convertUnary<ReluOp>;
  map["Sigmoid"] = convertUnary<SigmoidOp>;
  map["HardSigmoid"] = convertHardSigmoid;
  map["HardSwish"] = convertHardSwish;
  map["Add"] = convertBinary<AddOp>;
  map["Sub"] = convertBinary<SubOp>;
  map["Mul"] = convertBinary<MulOp>;
  map["Div"] = convertBinary<DivOp>;
  map["Pow"] = convertBinary<PowOp>;
  map["Equal"] = convertBinary<EqualOp>;
  map["Max"] = convertExtremum<MaxOp>;
  map["Min"] = convertExtremum<MinOp>;
  map["Where"] = convertWhere;
  map["Clip"] = convertClip;
  map["Cast"] = convertCast;
}
