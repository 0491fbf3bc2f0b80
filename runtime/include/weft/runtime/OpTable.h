//===- OpTable.h - a backend's kernels, registered against op records -*- C++
//-*-===//
//
// A backend registers each kernel against its op's record
// (`table[Op::Gemm] = ...`, weft/ops/Ops.def), so a misspelt kernel is a
// build error and a missing one is a test failure naming the op
// (test/unit/runtime/OpRecordTest.cpp, the CUDA emulator's test), never a
// plan that loads and then fails at its first step.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_OPTABLE_H
#define WEFT_RUNTIME_OPTABLE_H

#include "weft/ops/OpRecord.h"
#include "weft/runtime/Tensor.h"

#include <array>
#include <string>
#include <string_view>

namespace weft::rt {

/// `Fn` per op: a function pointer, null where the backend has no kernel.
template <typename Fn> class OpTable {
public:
  Fn &operator[](ops::Op op) { return fns[static_cast<size_t>(op)]; }
  /// The kernel of `op`, or null.
  Fn find(ops::Op op) const { return fns[static_cast<size_t>(op)]; }
  /// The kernel named `kernel` (an op's mnemonic), or null.
  Fn find(std::string_view kernel) const {
    const ops::OpRecord *r = ops::findOpRecord(kernel);
    return r ? find(r->op) : nullptr;
  }
  size_t count(std::string_view kernel) const {
    return find(kernel) != nullptr;
  }
  /// The kernel named `kernel`; throws Error when there is none.
  Fn at(std::string_view kernel) const {
    if (Fn fn = find(kernel))
      return fn;
    throw Error("no kernel '" + std::string(kernel) + "' on this backend");
  }

private:
  std::array<Fn, ops::kOpCount> fns{};
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_OPTABLE_H
