//===- OpRecords.cpp - the op records, seen from the dialect --------------===//

#include "weft/Dialect/Weft/IR/OpRecords.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

using namespace mlir;

// Every record names a dialect class weft::<Id>Op: a record of an op that
// does not exist does not build. (The other direction, a dialect op without
// a record, is OpRecordTest's: it enumerates the registered ops.)
#define WEFT_OP(Id, ...)                                                       \
  static_assert(sizeof(::weft::Id##Op) > 0, "no dialect op for record " #Id);
#include "weft/ops/Ops.def"

const weft::ops::OpRecord *weft::opRecord(Operation *op) {
  OperationName name = op->getName();
  if (name.getDialectNamespace() != WeftDialect::getDialectNamespace())
    return nullptr;
  llvm::StringRef mnemonic = name.stripDialect();
  return ops::findOpRecord({mnemonic.data(), mnemonic.size()});
}

int64_t weft::recordFlops(Operation *op) {
  const ops::OpRecord *r = opRecord(op);
  assert(r && !r->flops.isCustom() && "recordFlops of a Custom op");
  auto elements = [](Type type) {
    return isa<ShapedType>(type) ? numElements(type) : int64_t(0);
  };
  int64_t in = op->getNumOperands() ? elements(op->getOperand(0).getType()) : 0;
  int64_t out = op->getNumResults() ? elements(op->getResult(0).getType()) : 0;
  return r->flops.count(in, out);
}
