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
};

struct MemoryPlan {
  std::vector<Storage> storages;
  llvm::DenseMap<mlir::Value, unsigned> storageOf; ///< value -> storage index
  int numSteps = 0;       ///< ops in the function, constants included
  /// max(offset + size): the arena size, i.e. the highest byte a live buffer
  /// covers (the alignment padding above the top buffer is not counted).
  int64_t arenaBytes = 0;
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
