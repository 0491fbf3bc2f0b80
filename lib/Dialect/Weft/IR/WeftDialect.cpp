//===- WeftDialect.cpp - the weft dialect ---------------------------------===//

#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/KernelRuleCache.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"

using namespace mlir;
using namespace weft;

#include "weft/Dialect/Weft/IR/WeftDialect.cpp.inc"

#include "mlir/IR/DialectImplementation.h"
#include "weft/Dialect/Weft/IR/Task.h"

#include "llvm/ADT/TypeSwitch.h"

#define GET_TYPEDEF_CLASSES
#include "weft/Dialect/Weft/IR/WeftTypes.cpp.inc"

// #weft.task's storage and the dialect's attribute parser and printer; its
// own syntax and verifier are in Task.cpp.
#define GET_ATTRDEF_CLASSES
#include "weft/Dialect/Weft/IR/WeftAttrs.cpp.inc"

void WeftDialect::initialize() {
  rules = std::make_unique<KernelRuleCache>();
  addOperations<
#define GET_OP_LIST
#include "weft/Dialect/Weft/IR/WeftOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "weft/Dialect/Weft/IR/WeftAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "weft/Dialect/Weft/IR/WeftTypes.cpp.inc"
      >();
  // The shard dialect is loaded first (a dependent dialect).
  attachShardInterfaces(*getContext());
}

mlir::LogicalResult
WeftDialect::verifyOperationAttribute(mlir::Operation *op,
                                      mlir::NamedAttribute attr) {
  return verifyTaskAttribute(op, attr);
}
