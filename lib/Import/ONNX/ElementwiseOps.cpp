//===- ElementwiseOps.cpp - ONNX elementwise operators -> weft ------------===//
//
// Nothing here folds constants itself: an op whose operands are all known
// is evaluated by its CPU kernel when it is bound (GraphImporter::fold), as
// torch's shape computations and traced masks need.
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

/// Neg-13: weft.neg on floats; on integers (shape arithmetic: ONNX's
/// expanded LayerNormalization negates an axis) 0 - x, which the constant
/// evaluator folds like any integer op.
LogicalResult convertNeg(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  if (isa<FloatType>(element))
    return convertUnary<NegOp>(g, node);
  return g.bindResults(node,
                       g.build<SubOp>(node, g.scalarOf(node, element, 0), x));
}

template <typename OpT>
LogicalResult convertBinary(GraphImporter &g, const Node &node) {
  Value lhs = g.operand(node, 0), rhs = g.operand(node, 1);
  if (!lhs || !rhs)
    return failure();
  return g.bindResults(node, g.build<OpT>(node, lhs, rhs));
}

/// ONNX Max-13/Min-13: any number of operands broadcast together, as a
/// chain of weft.max/weft.min; a NaN operand gives NaN.
template <typename OpT>
LogicalResult convertExtremum(GraphImporter &g, const Node &node) {
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

LogicalResult convertWhere(GraphImporter &g, const Node &node) {
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
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  Value affine = AddOp::create(
      b, loc, MulOp::create(b, loc, x, g.scalarOf(node, element, alpha)),
      g.scalarOf(node, element, beta));
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
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(node, g.build<CastOp>(node, x, element));
}

/// CastLike-15: Cast to the element type of input 1.
LogicalResult convertCastLike(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  RankedTensorType like = g.type(node, 1);
  if (!x || !like)
    return failure();
  return g.bindResults(node, g.build<CastOp>(node, x, like.getElementType()));
}

/// Less-13, LessOrEqual-16, Greater-13, GreaterOrEqual-16.
LogicalResult convertCompare(GraphImporter &g, const Node &node) {
  static const llvm::StringMap<StringRef> predicates = {
      {"Less", "less"},
      {"LessOrEqual", "less_equal"},
      {"Greater", "greater"},
      {"GreaterOrEqual", "greater_equal"}};
  Value lhs = g.operand(node, 0), rhs = g.operand(node, 1);
  if (!lhs || !rhs)
    return failure();
  return g.bindResults(
      node,
      g.build<CompareOp>(node, lhs, rhs, predicates.lookup(node.op_type())));
}

/// And-7, Or-7, Xor-7.
LogicalResult convertLogical(GraphImporter &g, const Node &node) {
  Value lhs = g.operand(node, 0), rhs = g.operand(node, 1);
  if (!lhs || !rhs)
    return failure();
  std::string kind = StringRef(node.op_type()).lower();
  return g.bindResults(node, g.build<LogicalOp>(node, lhs, rhs, kind));
}

LogicalResult convertIsNaN(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(node, g.build<IsNaNOp>(node, x));
}

LogicalResult convertIsInf(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(
      node, g.build<IsInfOp>(node, x, g.attrInt(node, "detect_negative") != 0,
                             g.attrInt(node, "detect_positive") != 0));
}

/// Gelu-20: the erf form, or its tanh approximation.
LogicalResult convertGelu(GraphImporter &g, const Node &node) {
  std::string approximate = g.attrString(node, "approximate");
  if (approximate == "tanh")
    return convertUnary<GeluTanhOp>(g, node);
  if (approximate != "none")
    return g.error(node) << "approximate '" << approximate
                         << "' is neither none nor tanh";
  return convertUnary<GeluOp>(g, node);
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
  map["CastLike"] = convertCastLike;
  map["Sin"] = convertUnary<SinOp>;
  map["Cos"] = convertUnary<CosOp>;
  map["Not"] = convertUnary<NotOp>;
  map["IsNaN"] = convertIsNaN;
  map["IsInf"] = convertIsInf;
  map["Gelu"] = convertGelu;
  for (const char *op : {"Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
    map[op] = convertCompare;
  for (const char *op : {"And", "Or", "Xor"})
    map[op] = convertLogical;
}
