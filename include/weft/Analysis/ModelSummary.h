//===- ModelSummary.h - parameter, FLOP and op counts of a model -*- C++
//-*-===//
#ifndef WEFT_ANALYSIS_MODELSUMMARY_H
#define WEFT_ANALYSIS_MODELSUMMARY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>
#include <string>

namespace weft {

/// Totals over one model function, from its argument attributes and the
/// CostOpInterface of every op.
struct ModelSummary {
  int64_t params = 0;     ///< elements of `weft.param` arguments (trainable)
  int64_t paramBytes = 0; ///< bytes of `weft.param` arguments
  int64_t frozen = 0;      ///< elements of frozen initializers (`weft.frozen`)
  int64_t frozenBytes = 0; ///< their bytes (included in stateBytes)
  int64_t stateBytes = 0; ///< bytes of `weft.state` arguments (BN stats, frozen)
  int64_t inputBytes = 0; ///< bytes of `weft.input` arguments (one batch)
  int64_t flops = 0;      ///< FLOPs of one execution of the function
  int64_t bytesRead = 0;  ///< bytes read by all ops
  int64_t bytesWritten = 0;
  std::map<std::string, int64_t> opCounts; ///< op name -> count
};

ModelSummary summarizeModel(mlir::func::FuncOp func);

/// Whether `func` trains: it returns one scalar float (its loss) and has
/// parameters (`weft.param` arguments). Anything else (an ONNX node test,
/// say) compiles forward only.
bool isTrainable(mlir::func::FuncOp func);

} // namespace weft

#endif // WEFT_ANALYSIS_MODELSUMMARY_H
