//===- FixedBatch.cpp - diagnosing a graph exported at a fixed batch ------===//

#include "GraphImporter.h"

#include "llvm/ADT/DenseSet.h"

#include <onnx/shape_inference/implementation.h>

using namespace mlir;
using namespace weft;

int64_t weft::globalBatchOf(const onnx::ModelProto &model,
                            const ImportOptions &options) {
  llvm::StringSet<> initializers;
  for (const auto &init : model.graph().initializer())
    initializers.insert(init.name());
  for (const auto &in : model.graph().input()) {
    const auto &dims = in.type().tensor_type().shape().dim();
    if (!initializers.contains(in.name()) && dims.size() &&
        dims[0].has_dim_value())
      return dims[0].dim_value() * options.batchSplit();
  }
  return 0;
}

const onnx::NodeProto *weft::fixedBatchReshape(const onnx::ModelProto &model,
                                               StringRef failing, int64_t batch,
                                               SmallVectorImpl<int64_t> *dims) {
  onnx::ModelProto lenient = model;
  try {
    onnx::ShapeInferenceOptions inference(/*check_type=*/false,
                                          /*strict_mode=*/0,
                                          /*data_prop=*/true);
    onnx::shape_inference::InferShapes(
        lenient, onnx::OpSchemaRegistry::Instance(), inference);
  } catch (const std::exception &) {
    return nullptr;
  }
  const onnx::GraphProto &graph = lenient.graph();
  llvm::StringMap<const onnx::TypeProto *> types;
  for (const auto &info : graph.value_info())
    types[info.name()] = &info.type();
  // Node indices: lenient inference adds no nodes, so an index names the
  // same node of `model`.
  llvm::StringMap<int> producers;
  SmallVector<int> queue;
  for (int n = 0; n < graph.node_size(); ++n) {
    for (const std::string &out : graph.node(n).output())
      producers[out] = n;
    if (graph.node(n).name() == failing)
      queue.push_back(n);
  }
  // Breadth-first from the failing node towards the inputs.
  llvm::SmallDenseSet<int, 32> seen(queue.begin(), queue.end());
  for (size_t next = 0; next < queue.size(); ++next) {
    const onnx::NodeProto &node = graph.node(queue[next]);
    const onnx::TypeProto *type =
        node.output_size() ? types.lookup(node.output(0)) : nullptr;
    if (node.op_type() == "Reshape" && type &&
        type->tensor_type().has_shape()) {
      SmallVector<int64_t> shape;
      for (const auto &d : type->tensor_type().shape().dim())
        shape.push_back(d.has_dim_value() ? d.dim_value() : 0);
      if (llvm::any_of(
              shape, [&](int64_t d) { return d >= batch && d % batch == 0; })) {
        *dims = shape;
        return &model.graph().node(queue[next]);
      }
    }
    for (const std::string &in : node.input())
      if (auto it = producers.find(in);
          it != producers.end() && seen.insert(it->second).second)
        queue.push_back(it->second);
  }
  return nullptr;
}
