//===- OpCheck.h - weft-run's instruction check, for the compiler -*- C++
//-*-===//
//
// The plan loader's check of a compute instruction (KernelSpec.h's
// checkKernel: input count, attributes, each output's dtype and shape by
// the kernel's rule, in-place and overlapping operands), without
// exceptions, so that plan emission runs it on every instruction before it
// writes the plan: weftc never writes a plan that weft-run refuses.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_OPS_OPCHECK_H
#define WEFT_OPS_OPCHECK_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft::ops {

/// One operand as the plan places it: a plan dtype name ("f32", "bf16",
/// "i64", ...), a row-major shape and its offset in the rank's arena (bytes).
struct OperandDesc {
  std::string dtype;
  std::vector<int64_t> shape;
  int64_t offset = 0;
};

/// What one execution costs by the kernel's specification: FLOPs
/// (CostOpInterface's units) and bytes read and written.
struct InstructionCost {
  int64_t flops = 0, bytesRead = 0, bytesWritten = 0;
};

/// Checks a compute instruction of kernel `kernel` as `weft-run` loads it.
/// Returns the empty string when it would load (and sets `*cost`), else
/// weft-run's message, e.g. "kernel pad: input 0 is bf16, ...".
std::string checkInstruction(std::string_view kernel,
                             const std::vector<OperandDesc> &inputs,
                             const std::vector<OperandDesc> &outputs,
                             const nlohmann::json &attrs,
                             InstructionCost *cost = nullptr);

} // namespace weft::ops

#endif // WEFT_OPS_OPCHECK_H
