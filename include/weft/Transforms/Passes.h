//===- Passes.h - weft passes -----------------------------------*- C++ -*-===//
#ifndef WEFT_TRANSFORMS_PASSES_H
#define WEFT_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"

#include "weft/Analysis/GradientBuckets.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include <optional>

namespace weft {

struct SimResult;

#define GEN_PASS_DECL
#include "weft/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Transforms/Passes.h.inc"

/// weft-simulate-pipeline that also leaves its prediction in `*prediction`
/// (when the schedule completes), so that a driver reporting the timeline
/// (weftc) does not simulate the step a second time.
std::unique_ptr<mlir::Pass>
createSimulatePipeline(std::optional<SimResult> *prediction,
                       llvm::StringRef deviceModel = "");

} // namespace weft

#endif // WEFT_TRANSFORMS_PASSES_H
