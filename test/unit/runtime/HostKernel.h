//===- HostKernel.h - one CPU kernel on host vectors, for tests -*- C++ -*-===//
//
// Tests of single kernels: tensors held in std::vectors, and a launch that
// checks the instruction against the kernel table (KernelSpec.h) as plan
// loading does, then runs the CPU kernel.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TEST_UNIT_RUNTIME_HOSTKERNEL_H
#define WEFT_TEST_UNIT_RUNTIME_HOSTKERNEL_H

#include "weft/runtime/KernelSpec.h"

#include "../../../runtime/kernels/Kernel.h"

#include <cstdint>
#include <vector>

namespace weft::rt::test {

/// A host tensor of float (f32), double (f64) or int64_t (i64) elements,
/// zero-filled to its shape's size; converts to a Tensor viewing it.
template <typename E> struct Host {
  std::vector<int64_t> shape;
  std::vector<E> v;

  explicit Host(std::vector<int64_t> shape, std::vector<E> values = {})
      : shape(std::move(shape)), v(std::move(values)) {
    int64_t n = 1;
    for (int64_t d : this->shape)
      n *= d;
    v.resize(n);
  }
  operator Tensor() {
    DType dtype = std::is_same_v<E, float>    ? DType::F32
                  : std::is_same_v<E, double> ? DType::F64
                                              : DType::I64;
    return Tensor{v.data(), dtype, shape};
  }
};

/// Checks the instruction against the kernel table (its operands placed
/// one after another in an arena), then runs the kernel.
inline void launch(const char *kernel, std::vector<Tensor> in,
                   std::vector<Tensor> out,
                   const nlohmann::json &attrs = nlohmann::json::object()) {
  std::vector<OperandPlacement> placedIn, placedOut;
  int64_t offset = 0;
  auto place = [&](const Tensor &t) {
    OperandPlacement p{{t.dtype, t.shape}, offset};
    offset += (t.bytes() + 63) / 64 * 64;
    return p;
  };
  for (const Tensor &t : in)
    placedIn.push_back(place(t));
  for (const Tensor &t : out)
    placedOut.push_back(place(t));
  CheckedKernel checked =
      checkKernel(*findKernelSpec(kernel), placedIn, placedOut, attrs);
  KernelContext ctx;
  KernelCall call{kernel, std::move(in), std::move(out), checked.attrs, ctx};
  kernelTable().at(kernel)(call);
}

} // namespace weft::rt::test

#endif // WEFT_TEST_UNIT_RUNTIME_HOSTKERNEL_H
