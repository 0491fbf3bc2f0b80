//===- RepeatedLayers.h - a forward region's repeated layers ----*- C++ -*-===//
//
// A model's layers, found in its graph rather than named by the user: the
// forward is cut wherever one activation alone is live from one op to the
// next (the residual stream between blocks, or between a transformer
// block's attention and MLP halves), and the longest run of back-to-back
// copies of a sequence of those parts (by their ops' names) is the model's
// repeated layer. Full recompute at layer granularity keeps each layer's
// input only, as Megatron-LM does (weft-checkpoint); the layout search
// bounds the pipeline degree by the layer count (AutoParallel.h).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_REPEATEDLAYERS_H
#define WEFT_ANALYSIS_REPEATEDLAYERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace weft {

/// `ops` (forward ops of one region, in program order) split after every op
/// past which a single value is live: values defined in the region and
/// read after the cut, activations from before it (received activations,
/// model inputs, and a micro-batch's slices of model inputs) between their
/// first and last reader in it; parameters and constants are free. Readers
/// outside `ops` read after every cut.
llvm::SmallVector<llvm::ArrayRef<mlir::Operation *>>
residualSegments(llvm::ArrayRef<mlir::Operation *> ops);

/// Consecutive `parts` (slices of one region, residualSegments') grouped
/// into the repeated unit: the longest run of r >= 2 back-to-back copies of
/// k parts (by the sequence of op names; ties go to the smallest k) becomes
/// r groups of k parts, and the parts left and right of it are grouped the
/// same way. A transformer block is two parts, a residual block one; parts
/// that repeat nothing stay as they are.
llvm::SmallVector<llvm::ArrayRef<mlir::Operation *>>
repeatedLayers(llvm::ArrayRef<llvm::ArrayRef<mlir::Operation *>> parts);

/// The copies in the longest run of repeated units of `func`'s forward
/// (its ops of kind Forward, which every op of an imported model is): a
/// GPT's transformer layers, a ResNet stage's residual blocks. 0 when no
/// unit repeats.
int64_t countRepeatedLayers(mlir::func::FuncOp func);

/// The same count over `parts` (residualSegments' of one region).
int64_t
countRepeatedLayers(llvm::ArrayRef<llvm::ArrayRef<mlir::Operation *>> parts);

/// Bytes a pipeline cut between two of `func`'s repeated layers carries,
/// one execution's: the values the first repeated layer defines that a
/// forward op after it reads (the residual stream, [b, s, h] or its 1/T
/// under sequence parallelism, in the dtype the step keeps it in). 0 when
/// no unit repeats.
int64_t layerBoundaryBytes(mlir::func::FuncOp func);

/// Keeps the first `keep` (>= 1) copies of `func`'s repeated layer and
/// erases the rest, for a profile of a few layers that stands for many (the
/// layout search's, AutoParallel.h): the last kept layer's output takes the
/// place of the run's, and the parameter arguments nothing reads any more
/// are erased. `func` is an imported forward (every op of kind Forward).
/// Returns the copies the run had; 0, changing nothing, when no unit
/// repeats, when a layer passes on more than one value, or when `keep` is
/// not below the copies.
int64_t truncateRepeatedLayers(mlir::func::FuncOp func, int64_t keep);

} // namespace weft

#endif // WEFT_ANALYSIS_REPEATEDLAYERS_H
