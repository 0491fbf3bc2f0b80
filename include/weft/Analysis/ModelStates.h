//===- ModelStates.h - a rank's model-state bytes (ZeRO) --------*- C++ -*-===//
//
// What Rajbhandari et al., "ZeRO" (SC 2020), Section 3.1 calls model
// states, per rank: the parameters, their gradients and the optimizer
// state. With float32 Adam over Ψ parameters and N data-parallel replicas
// (Section 5.1's table; K = 12 bytes of optimizer state with the master
// copy, 8 without it in fp32):
//
//   stage 0: 4Ψ + 4Ψ + 8Ψ = 16Ψ          stage 2: 4Ψ + (4 + 8)Ψ/N
//   stage 1: 4Ψ + 4Ψ + 8Ψ/N              stage 3: (4 + 4 + 8)Ψ/N
//
// With --zero-prefetch (MindSpore's level1/level2: the parameters are
// pieces between steps) stages 1 and 2 keep 4Ψ/N of parameters: 4Ψ/N +
// 4Ψ + 8Ψ/N and (4 + 4 + 8)Ψ/N; the gathered whole parameters are then
// the step's temporaries, as stage 3's are.
//
// With ZeRO groups of S replicas (--optimizer-shard-size), N is S.
//
// plus the flat split's padding (a tensor of n elements is N ceil(n/N)),
// and with parameters under --optimizer-shard-threshold replicated (16
// bytes each, listed apart).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_MODELSTATES_H
#define WEFT_ANALYSIS_MODELSTATES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace weft {

struct ModelStates {
  int64_t params = 0;         ///< bytes of the trained parameters
  int64_t paramCount = 0;     ///< their elements: Ψ on this rank
  int64_t gradients = 0;      ///< bytes of the full gradients reduced
  int64_t optimizerState = 0; ///< bytes of the optimizer state
  /// With ZeRO, the parameters left replicated (under the threshold): their
  /// elements and the bytes of their parameters, gradients and state
  int64_t replicatedCount = 0, replicatedBytes = 0;
  int64_t total() const { return params + gradients + optimizerState; }
};

/// The model states of a rank's step `func` (after weft-append-optimizer),
/// per update: its parameter, gradient and optimizer-state operands' bytes;
/// for a ZeRO update (weft.zero_stage, weft.flat_shard) of a piece of s of
/// n elements: parameters n (s when the parameter argument is a piece:
/// stage 3, --zero-prefetch), gradients n (stages 2, 3: s), the
/// state as it is (pieces). Ψ counts whole parameters.
ModelStates modelStates(mlir::func::FuncOp func);

/// "model states: parameters P + gradients G + optimizer state O = T bytes
/// (Ψ = n)".
void printModelStates(const ModelStates &states, llvm::raw_ostream &os,
                      llvm::StringRef indent = "  ");

} // namespace weft

#endif // WEFT_ANALYSIS_MODELSTATES_H
