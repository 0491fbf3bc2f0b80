//===- WeftInterfaces.h - weft op interfaces --------------------*- C++ -*-===//
#ifndef WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_H
#define WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_H

#include "mlir/IR/OpDefinition.h"

namespace weft {
namespace detail {
/// Bytes of every operand of `op` (each read once).
int64_t defaultBytesRead(mlir::Operation *op);
/// Bytes of every result of `op` (each written once).
int64_t defaultBytesWritten(mlir::Operation *op);
} // namespace detail
} // namespace weft

#include "weft/Dialect/Weft/IR/WeftInterfaces.h.inc"

#endif // WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_H
