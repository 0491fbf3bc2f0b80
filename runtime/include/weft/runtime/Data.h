//===- Data.h - where a step's input batch comes from -----------*- C++ -*-===//
#ifndef WEFT_RUNTIME_DATA_H
#define WEFT_RUNTIME_DATA_H

#include "weft/runtime/Plan.h"

#include <map>
#include <set>
#include <string>

namespace weft::rt {

/// The inputs of step `step` from `dir`/step_<step>/<input>.pb, one ONNX
/// TensorProto per plan input named in `only` (a rank reads the inputs it
/// uses: a pipeline's first stage never opens the targets). Throws Error
/// naming the file on a missing file or a dtype/shape different from the
/// plan's.
std::map<std::string, std::string>
readStepInputs(const Plan &plan, const std::string &dir, int64_t step,
               const std::set<std::string> &only);

/// Synthetic inputs, a pure function of (seed, step, input name, element):
/// Philox4x32-10 with key (seed low, seed high) and counter (element / 4,
/// FNV-1a hash of the input's name, step, 0xDA7A). Floats are uniform in
/// [-1, 1); integers uniform in [0, index_bound) (the plan's bound for
/// indices and labels; 2 when the plan gives none); bools are fair coins.
std::map<std::string, std::string> syntheticInputs(const Plan &plan,
                                                   uint64_t seed, int64_t step);

} // namespace weft::rt

#endif // WEFT_RUNTIME_DATA_H
