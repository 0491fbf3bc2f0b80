//===- OpRecords.h - a weft op's record (weft/ops/Ops.def) -----*- C++ -*-===//
//
// The compiler's door to the op records it shares with the runtime: every
// fact a pass needs about an op's kind (precision policy, tensor- and
// sequence-parallel split class, view, FLOPs of the per-element ops) comes
// from the op's record (its .td definition, which weft-tblgen writes to
// runtime/include/weft/ops/Ops.def), never from an `isa<>` list in a pass.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_OPRECORDS_H
#define WEFT_DIALECT_WEFT_IR_OPRECORDS_H

#include "weft/ops/OpRecord.h"

#include "mlir/IR/Operation.h"

namespace weft {

/// The record of a `weft` op; null for an op of another dialect (func,
/// shard). Every registered weft op has one (OpRecordTest).
const ops::OpRecord *opRecord(mlir::Operation *op);

/// The record's Split class; None for ops of other dialects.
inline ops::Split splitOf(mlir::Operation *op) {
  const ops::OpRecord *r = opRecord(op);
  return r ? r->split : ops::Split::None;
}

/// FLOPs of one execution of an op whose record counts them (PerInput,
/// PerOutput, NoFlops): its per-element count times operand 0's or result
/// 0's elements. Must not be called for a Custom op.
int64_t recordFlops(mlir::Operation *op);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_OPRECORDS_H
