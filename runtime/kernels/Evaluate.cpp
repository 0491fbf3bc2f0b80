//===- Evaluate.cpp - one CPU kernel on host values -----------------------===//

#include "weft/runtime/Evaluate.h"

#include "Kernel.h"

namespace weft::rt {

std::string evaluateKernel(std::string_view kernel,
                           const std::vector<HostValue> &inputs,
                           const nlohmann::json &attrs, int64_t maxElements,
                           std::vector<HostValue> *outputs, bool *refused) {
  if (refused)
    *refused = false;
  try {
    const KernelSpec *spec = findKernelSpec(kernel);
    KernelFn fn = kernelTable().find(kernel);
    if (!spec || !fn)
      return "no CPU kernel " + std::string(kernel);
    std::vector<TensorType> inTypes;
    std::vector<Tensor> in;
    for (const HostValue &v : inputs) {
      TensorType type{parseDType(v.dtype), v.shape};
      if (isHalf(type.dtype) && kernel != "cast")
        return "a 16-bit operand";
      if (type.bytes() != int64_t(v.bytes.size()))
        return "an operand's bytes do not match its type";
      inTypes.push_back(type);
      in.push_back({const_cast<char *>(v.bytes.data()), type.dtype, v.shape});
    }
    KernelAttrs decoded = decodeKernelAttrs(*spec, attrs);
    std::vector<TensorType> outTypes = inferKernel(*spec, inTypes, decoded);
    outputs->clear();
    for (const TensorType &type : outTypes) {
      if (isHalf(type.dtype))
        return "a 16-bit result";
      if (type.numel() > maxElements)
        return "a result of more than " + std::to_string(maxElements) +
               " elements";
      outputs->push_back(
          {dtypeName(type.dtype), type.shape,
           std::vector<char>(static_cast<size_t>(type.bytes()))});
    }
    std::vector<Tensor> out;
    for (HostValue &v : *outputs)
      out.push_back({v.bytes.data(), parseDType(v.dtype), v.shape});
    KernelContext ctx;
    try {
      fn(KernelCall{std::string(kernel), std::move(in), std::move(out), decoded,
                    ctx});
    } catch (const std::exception &e) {
      if (refused)
        *refused = true;
      return e.what();
    }
    return "";
  } catch (const std::exception &e) {
    return e.what();
  }
}

} // namespace weft::rt
