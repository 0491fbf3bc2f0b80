//===- MemoryPlacement.h - how MemoryPlan places storages -------*- C++ -*-===//
//
// Shared by MemoryPlan.cpp (lifetimes, greedy placement) and
// MicroBatchSlots.cpp (placement by micro-batch slots).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_ANALYSIS_MEMORYPLACEMENT_H
#define WEFT_LIB_ANALYSIS_MEMORYPLACEMENT_H

#include "weft/Analysis/MemoryPlan.h"

namespace weft::detail {

/// Places `storages` (lifetimes within [0, steps)) greedily by size, best
/// fit (MemoryPlan.h), offsets from 0, around the first `fixed` of them,
/// which keep the offsets they have; returns max(offset + bytes).
int64_t placeGreedy(std::vector<Storage> &storages, int steps,
                    size_t fixed = 0);

/// Places `plan`'s storages by micro-batch slots (MemoryPlan.h) when `func`
/// runs two or more micro-batches (ops of two or more), setting each storage's microBatch and
/// carried and the plan's slots and slotBytes; false (nothing placed) when
/// it runs one.
bool placeBySlots(MemoryPlan &plan, mlir::func::FuncOp func);

} // namespace weft::detail

#endif // WEFT_LIB_ANALYSIS_MEMORYPLACEMENT_H
