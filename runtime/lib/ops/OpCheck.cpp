//===- OpCheck.cpp - the kernel rules behind an exception-free door -------===//

#include "weft/ops/OpCheck.h"

#include "weft/runtime/KernelSpec.h"

namespace weft::ops {

namespace {

rt::TensorType tensorType(const OperandDesc &d) {
  return {rt::parseDType(d.dtype), d.shape};
}

} // namespace

std::optional<InPlacePair> inPlaceInput(Op op, int output) {
  const rt::KernelSpec *spec = rt::findKernelSpec(op);
  if (!spec)
    return std::nullopt;
  for (const rt::KernelSpec::InPlace &p : spec->inPlace)
    if (p.output == output)
      return InPlacePair{p.output, p.input, p.required};
  return std::nullopt;
}

std::string inferOutputs(Op op, const std::vector<OperandDesc> &inputs,
                         const nlohmann::json &attrs,
                         std::vector<OperandDesc> *outputs) {
  const rt::KernelSpec *spec = rt::findKernelSpec(op);
  if (!spec)
    return "weft." + std::string(record(op).mnemonic) + " has no kernel";
  try {
    std::vector<rt::TensorType> in;
    for (const OperandDesc &d : inputs)
      in.push_back(tensorType(d));
    std::vector<rt::TensorType> out =
        rt::inferKernel(*spec, in, rt::decodeKernelAttrs(*spec, attrs));
    outputs->clear();
    for (const rt::TensorType &t : out)
      outputs->push_back({rt::dtypeName(t.dtype), t.shape, 0});
    return "";
  } catch (const std::exception &e) {
    return e.what();
  }
}

std::string checkInstruction(std::string_view kernel,
                             const std::vector<OperandDesc> &inputs,
                             const std::vector<OperandDesc> &outputs,
                             const nlohmann::json &attrs,
                             InstructionCost *cost) {
  const rt::KernelSpec *spec = rt::findKernelSpec(kernel);
  if (!spec)
    return "unknown kernel '" + std::string(kernel) + "'";
  try {
    auto placed = [](const std::vector<OperandDesc> &descs) {
      std::vector<rt::OperandPlacement> out;
      for (const OperandDesc &d : descs)
        out.push_back({tensorType(d), d.offset});
      return out;
    };
    rt::CheckedKernel checked =
        rt::checkKernel(*spec, placed(inputs), placed(outputs), attrs);
    if (cost)
      *cost = {checked.cost.flops, checked.cost.bytesRead,
               checked.cost.bytesWritten};
    return "";
  } catch (const std::exception &e) {
    return "kernel " + std::string(kernel) + ": " + e.what();
  }
}

} // namespace weft::ops
