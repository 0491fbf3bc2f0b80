//===- WeftInterfaces.h - weft op interfaces --------------------*- C++ -*-===//
#ifndef WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_H
#define WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_H

#include "weft/Dialect/Weft/IR/Sharding.h"

#include "mlir/IR/OpDefinition.h"

#include <optional>
#include <string>

namespace weft {
namespace detail {
/// Bytes of every operand of `op` (each read once).
int64_t defaultBytesRead(mlir::Operation *op);
/// Bytes of every result of `op` (each written once).
int64_t defaultBytesWritten(mlir::Operation *op);
} // namespace detail

/// See KernelContract.h.
mlir::LogicalResult verifyKernelContract(mlir::Operation *op);

/// On every weft op: an op that lowers to a kernel has the result types the
/// kernel's specification gives (KernelContract.h). It is checked as a
/// region trait only so that it runs after the op's own verifier: an op
/// whose operands are malformed gets its verifier's message, not the
/// kernel's.
template <typename ConcreteType>
class KernelContract
    : public mlir::OpTrait::TraitBase<ConcreteType, KernelContract> {
public:
  static mlir::LogicalResult verifyRegionTrait(mlir::Operation *op) {
    return verifyKernelContract(op);
  }
};

/// On Weft_KernelTypedOp: its result types are inferred by its kernel's
/// rule, from the attributes plan emission writes (KernelContract.h), and
/// the verifier of InferTypeOpInterface (which runs before region traits)
/// holds them to it; KernelContract does not ask the rule again.
template <typename ConcreteType>
class KernelTypedResults
    : public mlir::OpTrait::TraitBase<ConcreteType, KernelTypedResults> {};
} // namespace weft

#include "weft/Dialect/Weft/IR/WeftInterfaces.h.inc"

#endif // WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_H
