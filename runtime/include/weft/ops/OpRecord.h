//===- OpRecord.h - the op records, compiler and runtime --------*- C++ -*-===//
//
// The records of Ops.def as data: an `Op` enumerator per weft op and its
// facts. Ops.def is generated from the dialect's .td files (weft-tblgen;
// WeftBase.td documents the columns) and checked in for the LLVM-free
// runtime build. MLIR-free and exception-free, so both the compiler (built
// without exceptions, with MLIR) and the runtime (without MLIR) include it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_OPS_OPRECORD_H
#define WEFT_OPS_OPRECORD_H

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace weft::ops {

/// One enumerator per weft op, in Ops.def's order.
enum class Op : uint16_t {
#define WEFT_OP(Id, mnemonic, lowering, backends, gradient, precision, split,  \
                flops)                                                         \
  Id,
#include "weft/ops/Ops.def"
};

inline constexpr size_t kOpCount = 0
#define WEFT_OP(Id, mnemonic, lowering, backends, gradient, precision, split,  \
                flops)                                                         \
  +1
#include "weft/ops/Ops.def"
    ;

/// What the plan makes of the op (Ops.def's Lowering column).
enum class Lowering : uint8_t { Kernel, View, Constant, Instruction };
/// Which backends implement it (Backends column).
enum class Backends : uint8_t { CpuCuda, CpuOnly, NoKernel };
/// Whether weft-autodiff differentiates it (Gradient column).
enum class Gradient : uint8_t { Rule, NotDifferentiable };
/// Its operands' precision under mixed precision (Precision column).
enum class Precision : uint8_t { Low, Full, Promote, Follow };
/// How a tensor- or sequence-parallel shard passes through it (Split column).
enum class Split : uint8_t {
  Elementwise,
  ElementwiseRandom,
  Heads,
  Softmax,
  LayerNorm,
  Layout,
  Linear,
  Vocab,
  None,
};

/// FLOPs of one execution (Flops column): `perElement` per element of
/// operand 0 (Input) or result 0 (Output), none, or a rule of the op's own
/// (Custom: its spec entry's `flops` and its CostOpInterface).
struct FlopRule {
  enum Base : uint8_t { None, Input, Output, Custom } base;
  int64_t perElement;

  /// The count for these element counts; 0 for Custom (ask the op's rule).
  /// Saturates at INT64_MAX.
  int64_t count(int64_t inputElements, int64_t outputElements) const {
    int64_t n = base == Input    ? inputElements
                : base == Output ? outputElements
                                 : 0;
    int64_t r;
    return __builtin_mul_overflow(n, perElement, &r) ? INT64_MAX : r;
  }
  bool isCustom() const { return base == Custom; }
};

struct OpRecord {
  Op op;
  std::string_view mnemonic; ///< weft.<mnemonic>; the plan's kernel name
  Lowering lowering;
  Backends backends;
  Gradient gradient;
  Precision precision;
  Split split;
  FlopRule flops;

  bool isKernel() const { return lowering == Lowering::Kernel; }
  bool isView() const { return lowering == Lowering::View; }
  bool isElementwise() const { return split == Split::Elementwise; }
};

/// Every record, indexed by `Op`.
const OpRecord (&opRecords())[kOpCount];
inline const OpRecord &record(Op op) {
  return opRecords()[static_cast<size_t>(op)];
}
/// The record of `weft.<mnemonic>` (or plan kernel `mnemonic`); null when
/// there is none.
const OpRecord *findOpRecord(std::string_view mnemonic);
/// Whether `attribute` of `op` is the compiler's alone (its .td
/// definition's compilerAttrs): plan emission leaves it out.
bool isCompilerAttribute(Op op, std::string_view attribute);

/// Names of the column values, for docs and messages.
const char *name(Lowering);
const char *name(Backends);
const char *name(Gradient);
const char *name(Precision);
const char *name(Split);

} // namespace weft::ops

#endif // WEFT_OPS_OPRECORD_H
