//===- ControlFlowOps.cpp - ONNX If on a compile-time condition -> weft ---===//
//
// Exporters trace Python branches on shapes into `If` nodes (transformers
// 4.30's Llama: "if seq_len > self.max_seq_len_cached", recomputing the
// rotary cache). weft shapes are static, so the condition is known at
// compile time: the branch taken is imported in place, the other dropped.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

using namespace mlir;
using namespace weft;

namespace {

/// If-21: cond (a one-element bool), then_branch, else_branch.
LogicalResult convertIf(GraphImporter &g, const Node &node) {
  const HostTensor *cond = g.requireConstant(node, 0, "cond");
  if (!cond)
    return failure();
  if (cond->size() != 1)
    return g.error(node) << "cond holds " << cond->size()
                         << " elements; it must hold one";
  const char *taken = cond->getInt(0) ? "then_branch" : "else_branch";
  const onnx::GraphProto &branch = g.attrOrDefault(node, taken).g();
  if (branch.output_size() != node.output_size())
    return g.error(node) << taken << " has " << branch.output_size()
                         << " outputs for " << node.output_size();
  if (failed(g.convertInline(branch)))
    return failure();
  for (int i = 0; i < node.output_size(); ++i) {
    Node forward;
    forward.set_op_type("Identity");
    forward.add_input(branch.output(i).name());
    forward.add_output(node.output(i));
    if (const HostTensor *c = g.constant(forward, 0)) {
      g.bind(node, i, *c);
      continue;
    }
    Value v = g.operand(forward, 0);
    if (!v)
      return failure();
    g.bind(node, i, v);
  }
  return success();
}

} // namespace

void weft::registerControlFlowConverters(ConverterMap &map) {
  map["If"] = convertIf;
}
