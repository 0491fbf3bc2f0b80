//===- WeftDialect.cpp - the weft dialect ---------------------------------===//

#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

using namespace mlir;
using namespace weft;

#include "weft/Dialect/Weft/IR/WeftDialect.cpp.inc"

void WeftDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "weft/Dialect/Weft/IR/WeftOps.cpp.inc"
      >();
}
