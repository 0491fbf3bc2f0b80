//===- ConstantOps.cpp - ONNX constant and shape sources -> weft ----------===//
//
// Constant, ConstantOfShape, Shape, Range and Identity produce compile-time
// values: weft shapes are static, so Shape of any tensor is known.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include <cmath>

using namespace mlir;
using namespace weft;
using onnx::TensorProto;

namespace {

LogicalResult convertConstant(GraphImporter &g, const Node &node) {
  HostTensor out;
  std::string why;
  if (const auto *a = g.attr(node, "value")) {
    if (!readTensorProto(a->t(), out, why))
      return g.error(node) << "cannot read its value: " << why;
  } else if (const auto *a = g.attr(node, "value_float")) {
    out = HostTensor::zeros(TensorProto::FLOAT, {});
    out.floats[0] = a->f();
  } else if (const auto *a = g.attr(node, "value_floats")) {
    out = HostTensor::zeros(TensorProto::FLOAT, {a->floats_size()});
    out.floats.assign(a->floats().begin(), a->floats().end());
  } else if (const auto *a = g.attr(node, "value_int")) {
    out = HostTensor::fromInts({a->i()}, {});
  } else if (const auto *a = g.attr(node, "value_ints")) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    out = HostTensor::fromInts(v, {(int64_t)v.size()});
  } else {
    return g.error(node) << "only tensor, float(s) and int(s) values are "
                            "supported (sparse and string constants are not)";
  }
  g.bind(node, 0, std::move(out));
  return success();
}

LogicalResult convertConstantOfShape(GraphImporter &g, const Node &node) {
  const HostTensor *shape = g.requireConstant(node, 0, "shape");
  if (!shape)
    return failure();
  HostTensor fill = HostTensor::zeros(TensorProto::FLOAT, {1});
  std::string why;
  if (const auto *a = g.attr(node, "value"))
    if (!readTensorProto(a->t(), fill, why) || fill.size() != 1)
      return g.error(node) << "value must be a one-element tensor";
  SmallVector<int64_t> dims = shape->toInts();
  for (int64_t d : dims)
    if (d < 0)
      return g.error(node) << "shape has a negative dim " << d;
  HostTensor out = HostTensor::zeros(fill.dtype, dims);
  if (out.size() <= kMaxFoldElements) {
    for (int64_t k = 0; k < out.size(); ++k)
      out.copy(k, fill, 0);
    g.bind(node, 0, std::move(out));
    return success();
  }
  // Large fills stay a splat: no per-element storage.
  auto type =
      RankedTensorType::get(dims, toMLIRElementType(fill.dtype, g.context()));
  auto splat = DenseElementsAttr::get(
      type, toElementsAttr(fill, g.context()).getSplatValue<Attribute>());
  g.bind(node, 0, ConstantOp::create(g.builder(), g.loc(node), splat));
  return success();
}

LogicalResult convertShape(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  int64_t rank = type.getRank();
  // Shape-15: optional [start, end) window, negative values count from the end.
  auto clampIndex = [rank](int64_t v) {
    v = v < 0 ? v + rank : v;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clampIndex(g.attrInt(node, "start"));
  int64_t end = clampIndex(g.attrInt(node, "end", rank));
  SmallVector<int64_t> dims;
  for (int64_t i = start; i < end; ++i)
    dims.push_back(type.getDimSize(i));
  g.bind(node, 0, HostTensor::fromInts(dims, {(int64_t)dims.size()}));
  return success();
}

/// Size-21: the element count, known once shapes are static (ONNX's
/// function bodies take a rank as Size(Shape(x))).
LogicalResult convertSize(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  g.bind(node, 0, HostTensor::fromInts({type.getNumElements()}, {}));
  return success();
}

LogicalResult convertRange(GraphImporter &g, const Node &node) {
  const HostTensor *start = g.requireConstant(node, 0, "start");
  const HostTensor *limit = g.requireConstant(node, 1, "limit");
  const HostTensor *delta = g.requireConstant(node, 2, "delta");
  if (!start || !limit || !delta)
    return failure();
  double s = start->getDouble(0), l = limit->getDouble(0),
         d = delta->getDouble(0);
  if (d == 0)
    return g.error(node) << "delta must be non-zero";
  // ONNX Range-11: max(ceil((limit - start) / delta), 0) elements.
  int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((l - s) / d));
  HostTensor out = HostTensor::zeros(start->dtype, {n});
  for (int64_t k = 0; k < n; ++k)
    out.set(k, s + k * d);
  g.bind(node, 0, std::move(out));
  return success();
}

LogicalResult convertIdentity(GraphImporter &g, const Node &node) {
  if (const HostTensor *c = g.constant(node, 0)) {
    g.bind(node, 0, *c);
    return success();
  }
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  g.bind(node, 0, x);
  return success();
}

} // namespace

void weft::registerConstantConverters(ConverterMap &map) {
  map["Constant"] = convertConstant;
  map["ConstantOfShape"] = convertConstantOfShape;
  map["Shape"] = convertShape;
  map["Size"] = convertSize;
  map["Range"] = convertRange;
  map["Identity"] = convertIdentity;
}
