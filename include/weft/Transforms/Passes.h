//===- Passes.h - weft passes -----------------------------------*- C++ -*-===//
#ifndef WEFT_TRANSFORMS_PASSES_H
#define WEFT_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Pass/Pass.h"

#include "weft/Dialect/Weft/IR/WeftDialect.h"

namespace weft {

#define GEN_PASS_DECL
#include "weft/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "weft/Transforms/Passes.h.inc"

} // namespace weft

#endif // WEFT_TRANSFORMS_PASSES_H
