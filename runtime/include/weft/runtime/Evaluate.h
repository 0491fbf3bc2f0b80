//===- Evaluate.h - run one kernel on host values, for the compiler -*- C++
//-*-===//
//
// The compiler folds every op whose operands are all known at compile time
// (shape arithmetic, the attention masks exporters trace into the graph,
// `If` conditions) by running the op's CPU kernel on them: one evaluator,
// the runtime's own, so a folded value is exactly what weft-run would have
// computed. Exception-free at this door (the compiler is built without
// exceptions).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EVALUATE_H
#define WEFT_RUNTIME_EVALUATE_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft::rt {

/// A host tensor: a plan dtype name ("f32", "i64", "bool", ...), a row-major
/// shape, and numel * dtype-size bytes (bool: one byte, 0 or 1).
struct HostValue {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// Runs kernel `kernel` (an op's mnemonic) of the CPU backend on `inputs`
/// with plan attributes `attrs`: checks them against the kernel's
/// specification (KernelSpec.h), sizes the outputs by its rule and fills
/// `*outputs`. Returns the empty string, else why it cannot run: no CPU
/// kernel, a 16-bit operand (kernels other than cast see 16-bit values
/// widened by the backend, not here), more than `maxElements` output
/// elements, or the specification's or kernel's own message. `*refused`
/// (when given) tells the last apart: the kernel itself refused these values
/// (an index out of range), which weft-run would do at run time.
std::string evaluateKernel(std::string_view kernel,
                           const std::vector<HostValue> &inputs,
                           const nlohmann::json &attrs, int64_t maxElements,
                           std::vector<HostValue> *outputs,
                           bool *refused = nullptr);

} // namespace weft::rt

#endif // WEFT_RUNTIME_EVALUATE_H
