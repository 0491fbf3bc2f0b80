//===- OpCheck.h - weft-run's kernel rules, for the compiler ----*- C++ -*-===//
//
// The kernel specification's rules (KernelSpec.h) behind an exception-free
// door, for the compiler, which is built without exceptions:
//  - inferOutputs: an op's result types by its kernel's rule. The dialect's
//    verifier holds every kernel op to it and ops may infer their result
//    types with it, so a pass cannot build IR that weft-run would refuse.
//  - checkInstruction: the plan loader's whole check of a compute
//    instruction (input count, attributes, each output's dtype and shape,
//    in-place and overlapping operands in the arena). Plan emission runs it
//    on every instruction: weftc never writes a plan that weft-run refuses.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_OPS_OPCHECK_H
#define WEFT_OPS_OPCHECK_H

#include "weft/ops/OpRecord.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
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

/// An output of a kernel that updates one of its inputs in place
/// (KernelSpec::InPlace): `required`, the kernel reads the state from the
/// output's bytes, which must be the input's; otherwise it may run in place
/// and the compiler decides.
struct InPlacePair {
  int output, input;
  bool required;
};

/// The in-place pair of output `output` of `op`'s kernel; nullopt when that
/// output has bytes of its own, or `op` lowers to no kernel. The compiler's
/// aliasing (inPlaceOperand) reads it, so the memory plan and weft-run's
/// placement check state each pair once.
std::optional<InPlacePair> inPlaceInput(Op op, int output);

/// The output dtypes and shapes (offsets 0) that `op`'s kernel writes for
/// `inputs` (offsets ignored) and the plan attributes `attrs`, in
/// `*outputs`. Returns the empty string, else weft-run's message without the
/// kernel's name, e.g. "input 3 is f16, expected f32 (the mean)". Keyed by
/// `Op`, not by name: the dialect calls it for every kernel op it verifies
/// or builds.
std::string inferOutputs(Op op, const std::vector<OperandDesc> &inputs,
                         const nlohmann::json &attrs,
                         std::vector<OperandDesc> *outputs);

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
