//===- KernelSpecCheck.h - checking instructions in tests ------*- C++ -*-===//
//
// Shared by the kernel specification tests: an f32 operand at an arena
// offset, the refusal message of checking an instruction (or "" when it
// passes), and the cost the table gives it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_RUNTIME_KERNELSPECCHECK_H
#define WEFT_TEST_UNIT_RUNTIME_KERNELSPECCHECK_H

#include "weft/runtime/KernelSpec.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::rt::spec_check {

inline OperandPlacement f32(std::vector<int64_t> shape, int64_t offset) {
  return {{DType::F32, std::move(shape)}, offset};
}

/// The Error message of checking the instruction, or "" when it passes.
inline std::string errorOf(const char *kernel, std::vector<OperandPlacement> in,
                           std::vector<OperandPlacement> out,
                           const nlohmann::json &attrs) {
  const KernelSpec *spec = findKernelSpec(kernel);
  EXPECT_NE(spec, nullptr) << kernel;
  try {
    checkKernel(*spec, in, out, attrs);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

inline KernelCost costOf(const char *kernel, std::vector<OperandPlacement> in,
                         std::vector<OperandPlacement> out,
                         const nlohmann::json &attrs) {
  return checkKernel(*findKernelSpec(kernel), in, out, attrs).cost;
}

} // namespace weft::rt::spec_check

#endif // WEFT_TEST_UNIT_RUNTIME_KERNELSPECCHECK_H
