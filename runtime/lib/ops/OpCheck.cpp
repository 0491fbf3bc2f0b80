//===- OpCheck.cpp - checkKernel behind an exception-free door ------------===//

#include "weft/ops/OpCheck.h"

#include "weft/runtime/KernelSpec.h"

namespace weft::ops {

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
        out.push_back({{rt::parseDType(d.dtype), d.shape}, d.offset});
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
