//===- ParameterReach.cpp - which parameter a value is computed from ------===//

#include "weft/Analysis/ParameterReach.h"

#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

StringAttr weft::parameterReaching(Value v) {
  SmallVector<Value> work{v};
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (!func)
        return StringAttr::get(v.getContext(), "<block argument>");
      if (auto name =
              func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr))
        return name;
      continue;
    }
    llvm::append_range(work, x.getDefiningOp()->getOperands());
  }
  return {};
}
