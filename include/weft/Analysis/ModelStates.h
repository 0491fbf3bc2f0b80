//===- ModelStates.h - a rank's model-state bytes (ZeRO) --------*- C++ -*-===//
//
// What Rajbhandari et al., "ZeRO" (SC 2020), Section 3.1 calls model
// states, per rank: the parameters, their gradients and the optimizer
// state. With float32 Adam over Ψ parameters that is 4Ψ + 4Ψ + 8Ψ = 16Ψ
// bytes unsharded, and with the optimizer state sharded over N data-
// parallel replicas (ZeRO stage 1, P_os) 8Ψ + 8Ψ/N (plus the flat split's
// padding: each bucket's n elements become N ceil(n / N)).
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
  int64_t total() const { return params + gradients + optimizerState; }
};

/// The model states of a rank's step `func` (after weft-append-optimizer):
/// parameters = the arguments the updates write (once each); gradients =
/// per update, its gradient operand or, for a sharded update (ZeRO), the
/// whole flat gradient its bucket's reduce-scatter reads; optimizer state =
/// the `weft.optimizer_state` arguments.
ModelStates modelStates(mlir::func::FuncOp func);

/// "model states: parameters P + gradients G + optimizer state O = T bytes
/// (Ψ = n)".
void printModelStates(const ModelStates &states, llvm::raw_ostream &os,
                      llvm::StringRef indent = "  ");

} // namespace weft

#endif // WEFT_ANALYSIS_MODELSTATES_H
