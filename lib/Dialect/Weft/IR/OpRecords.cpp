//===- OpRecords.cpp - the op records, seen from the dialect --------------===//

#include "weft/Dialect/Weft/IR/OpRecords.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include <type_traits>

using namespace mlir;

// An op defines getFlops (CustomFlops in its ODS) exactly when its record's
// Flops is Custom; the others take CostOpInterface's default, the record's
// count. A Custom op without its own rule, or a rule the record does not
// use, does not build.
namespace flops_column {
constexpr bool PerInput(int) { return false; }
constexpr bool PerOutput(int) { return false; }
constexpr bool NoFlops = false, Custom = true;
} // namespace flops_column
template <typename OpT>
constexpr bool definesGetFlops =
    std::is_same_v<decltype(&OpT::getFlops), int64_t (OpT::*)()>;
#define WEFT_OP(Id, mnemonic, lowering, backends, gradient, precision, split,  \
                flops)                                                         \
  static_assert(definesGetFlops<::weft::Id##Op> == flops_column::flops,        \
                "weft." mnemonic ": defines getFlops (CustomFlops) iff its "   \
                "record's Flops is Custom");
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
