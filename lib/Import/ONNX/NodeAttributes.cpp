//===- NodeAttributes.cpp - an ONNX node's attributes and axes ------------===//
//
// GraphImporter's readers of a node's attributes (its own, else its
// operator's schema default at the model's opset) and of the axes operators
// take as an attribute or an input.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include <onnx/defs/schema.h>

#include <algorithm>

using namespace mlir;
using namespace weft;

const onnx::AttributeProto *GraphImporter::attr(const Node &node,
                                                StringRef name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t GraphImporter::attrInt(const Node &node, StringRef name, int64_t dflt) {
  const auto *a = attr(node, name);
  return a ? a->i() : dflt;
}

/// The shortest decimal that reads back as `f`: ONNX float attributes are
/// float32, and 0.8f should become the f64 attribute 0.8, not
/// 0.800000011920929.
static double shortestDecimal(float f) {
  for (int precision = 1; precision < 10; ++precision) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.*g", precision, f);
    double d = std::strtod(text, nullptr);
    if (static_cast<float>(d) == f)
      return d;
  }
  return f;
}

double GraphImporter::attrFloat(const Node &node, StringRef name, double dflt) {
  const auto *a = attr(node, name);
  return a ? shortestDecimal(a->f()) : dflt;
}

std::string GraphImporter::attrString(const Node &node, StringRef name,
                                      StringRef dflt) {
  const auto *a = attr(node, name);
  return a ? a->s() : dflt.str();
}

const onnx::AttributeProto &GraphImporter::attrOrDefault(const Node &node,
                                                         StringRef name) {
  if (const onnx::AttributeProto *a = attr(node, name))
    return *a;
  int64_t opset = -1;
  for (const auto &import : model.opset_import())
    if (import.domain() == node.domain() ||
        (node.domain().empty() && import.domain() == "ai.onnx"))
      opset = import.version();
  const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
      node.op_type(), static_cast<int>(opset), node.domain());
  if (schema) {
    auto it = schema->attributes().find(name.str());
    if (it != schema->attributes().end() &&
        it->second.default_value.type() != onnx::AttributeProto::UNDEFINED)
      return it->second.default_value;
  }
  llvm::report_fatal_error(llvm::Twine("weft's ONNX importer reads ") +
                           node.op_type() + "'s attribute '" + name +
                           "' for its default, and ONNX opset " +
                           llvm::Twine(opset) + " states none");
}

int64_t GraphImporter::attrInt(const Node &node, StringRef name) {
  return attrOrDefault(node, name).i();
}

double GraphImporter::attrFloat(const Node &node, StringRef name) {
  return shortestDecimal(attrOrDefault(node, name).f());
}

std::string GraphImporter::attrString(const Node &node, StringRef name) {
  return attrOrDefault(node, name).s();
}

SmallVector<int64_t> GraphImporter::attrInts(const Node &node, StringRef name) {
  const auto *a = attr(node, name);
  if (!a)
    return {};
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

FailureOr<int64_t> GraphImporter::normalizeAxis(const Node &node, int64_t axis,
                                                int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    return error(node) << "axis " << axis << " out of range for rank " << rank;
  return normalized;
}

FailureOr<SmallVector<int64_t>>
GraphImporter::axesInput(const Node &node, int index, int64_t rank) {
  const HostTensor *t = requireConstant(node, index, "axes");
  if (!t)
    return failure();
  SmallVector<int64_t> result = t->toInts();
  for (int64_t &a : result) {
    FailureOr<int64_t> n = normalizeAxis(node, a, rank);
    if (failed(n))
      return failure();
    a = *n;
  }
  if (llvm::SmallDenseSet<int64_t>(result.begin(), result.end()).size() !=
      result.size())
    return error(node) << "axes repeat";
  return result;
}

FailureOr<SmallVector<int64_t>> GraphImporter::axes(const Node &node,
                                                    int64_t rank) {
  SmallVector<int64_t> result;
  if (has(node, 1)) {
    FailureOr<SmallVector<int64_t>> given = axesInput(node, 1, rank);
    if (failed(given))
      return failure();
    result = std::move(*given);
  } else {
    result = attrInts(node, "axes");
    for (int64_t &a : result) {
      FailureOr<int64_t> n = normalizeAxis(node, a, rank);
      if (failed(n))
        return failure();
      a = *n;
    }
  }
  llvm::sort(result);
  if (std::adjacent_find(result.begin(), result.end()) != result.end())
    return error(node) << "axes repeat";
  return result;
}
