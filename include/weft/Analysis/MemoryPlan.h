//===- MemoryPlan.h - static arena layout of one rank's buffers -*- C++ -*-===//
//
// Every value of a model function gets a byte range in one arena, chosen at
// compile time from liveness, so the runtime never allocates.
//
// Lifetimes are measured in instruction steps: the function's ops in order,
// step i being the i-th op. Arguments (inputs, parameters, state) and
// constants live for the whole step; function results live to its end. A
// `weft.reshape` result is a view: it shares its operand's storage, whose
// lifetime is the union of both; so does the result of an in-place update
// (weft::inPlaceOperand: an optimizer step writes the parameter's bytes).
//
// Placement is greedy by size with best fit (the "greedy by size" offset
// calculation of Pisarchyk & Lee, "Efficient Memory Management for Deep
// Neural Net Inference", 2020): storages are placed largest first; each takes
// the smallest gap between already placed storages whose lifetimes overlap
// its own that fits it, or the end. Offsets are aligned to kAlignment bytes.
//
// A function that runs several micro-batches is placed by slots instead, so
// that every micro-batch's buffers lie where the previous ones' did and a
// plan can write one task body for all of them (docs/plan-format.md, "Task
// bodies"). A task instance is a maximal run of ops of one phase and one
// micro-batch. A micro-batch's storage (every op reading or writing it
// works on that micro-batch) is *transient* when one task instance holds
// all those ops, else *carried* (an activation kept for the backward, a
// transfer's buffer waited for later). Placed greedily, in this order:
//   [transient scratch | slot groups of carried storages] + program
// each instance's transients from 0 (instances never run together); each
// micro-batch's carried storages of a group in slot m mod K of that group;
// then the program's (arguments, constants, accumulators across micro-batches,
// the optimizer's) over the whole step, around the micro-batches' storages as
// placed: what lives only after the micro-batches takes their bytes, and a
// running sum born in a backward the bytes of activations that backward freed.
// Carried storages are matched across micro-batches by size and order of first
// use (an ordinal); an ordinal needs K slots, the fewest for which
// micro-batches sharing a slot are never live together (the schedule's
// micro-batches in flight: p - s for stage s of 1F1B, M for GPipe; a transfer's
// buffer waited for at the end of the step, one per micro-batch). Ordinals
// share a group when together they need no more slots than each alone; groups
// then merge while that saves slot bytes (K' S' < K_a S_a + K_b S_b: a
// zero-bubble schedule's kept and W-held storages). Each group's slots lie
// above the scratch region and the groups before it, or are placed greedily as
// one block around the scratch blocks. Those groupings and placements (and the
// groups by slot count alone) are compared with the program's storages around
// whole blocks (an instance's live while its transients are, a slot's while its
// micro-batches' storages are), and the smallest is placed as above.
// Micro-batches whose ops are alike get alike offsets (greedy placement
// depends only on sizes and the order of their own ops).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_MEMORYPLAN_H
#define WEFT_ANALYSIS_MEMORYPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <memory>
#include <optional>
#include <vector>

namespace weft {

/// Alignment of every buffer in the arena (bytes): a cache line, and enough
/// for any vector load.
inline constexpr int64_t kAlignment = 64;

enum class BufferKind { Input, Param, State, OptimizerState, Constant, Activation };

/// One region of the arena that one or more values (views) share.
struct Storage {
  int64_t size = 0;   ///< bytes the largest value in it occupies
  int64_t bytes = 0;  ///< size rounded up to kAlignment (the placement unit)
  int64_t offset = 0; ///< byte offset in the arena
  int start = 0;      ///< first step it is live (inclusive)
  int end = 0;        ///< last step it is live (inclusive)
  BufferKind kind = BufferKind::Activation;
  mlir::Value value; ///< the value that allocates it (views share it)
  /// The micro-batch every op reading or writing it works on, under slot
  /// placement; -1 for the program's storages (and without slots).
  int microBatch = -1;
  /// A micro-batch's storage live across its task instances: it lies in
  /// one of the micro-batch's slots, at offset + (microBatch mod
  /// slots[slotGroup].count) * slots[slotGroup].bytes; -1 for any other.
  int slotGroup = -1;
  bool carried() const { return slotGroup >= 0; }
};

struct MemoryPlan {
  std::vector<Storage> storages;
  llvm::DenseMap<mlir::Value, unsigned> storageOf; ///< value -> storage index
  int numSteps = 0;       ///< ops in the function, constants included
  /// max(offset + size): the arena size, i.e. the highest byte a live buffer
  /// covers (the alignment padding above the top buffer is not counted).
  int64_t arenaBytes = 0;
  /// Slot placement: each group of carried storages rotates over `count`
  /// slots `bytes` apart (empty when placed without slots: one
  /// micro-batch).
  struct SlotGroup {
    int64_t count = 1, bytes = 0;
  };
  std::vector<SlotGroup> slots;
  /// `s`'s offset as its micro-batch's first slot would hold it (s.offset
  /// for a storage that is not carried).
  int64_t slotZeroOffset(const Storage &s) const {
    if (!s.carried())
      return s.offset;
    const SlotGroup &g = slots[s.slotGroup];
    return s.offset - (s.microBatch % g.count) * g.bytes;
  }
};

struct MemoryPlanOptions {
  /// Bytes per element of every float tensor computed in the step
  /// (activations, their gradients, parameter gradients, temporaries,
  /// transfers), as under mixed precision: 2 for f16/bf16 activations. 0
  /// sizes every tensor at its own type, as weft-run executes it.
  /// Parameters, optimizer and model state, inputs and constants keep their
  /// type; bool and integer tensors (dropout masks: 1 byte) do too.
  int64_t activationElementBytes = 0;
};

/// Bytes per element of an activation dtype name: "f32" 4, "f16" and "bf16"
/// 2; std::nullopt for any other name.
std::optional<int64_t> activationElementBytes(llvm::StringRef dtype);

/// Plans `func`'s arena. `func` must be a weft model function (one block).
MemoryPlan planMemory(mlir::func::FuncOp func,
                      const MemoryPlanOptions &options = {});

/// The memory plans (default options) of a module's functions, each planned
/// once when first asked for: weftc's stage table and plan emission read
/// the same plans. The functions must not change while it is in use.
class MemoryPlans {
public:
  const MemoryPlan &of(mlir::func::FuncOp func);
  /// Plans every function of `funcs` not planned yet, in parallel (on the
  /// context's threads: each plan reads only its own function).
  void planAll(llvm::ArrayRef<mlir::func::FuncOp> funcs);

private:
  llvm::DenseMap<mlir::Operation *, std::unique_ptr<MemoryPlan>> plans;
};

/// True when the lifetimes of `a` and `b` overlap.
inline bool liveTogether(const Storage &a, const Storage &b) {
  return a.start <= b.end && b.start <= a.end;
}

} // namespace weft

#endif // WEFT_ANALYSIS_MEMORYPLAN_H
