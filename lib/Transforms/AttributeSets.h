//===- AttributeSets.h - one attribute set on many ops ----------*- C++ -*-===//
//
// Private to the passes. Operation::setAttr builds and uniques a new
// attribute dictionary per op; a pass that tags millions of ops (the
// micro-batch copies of a GPT-3 step) with one of a few values paid that
// per op. Ops share few distinct attribute sets: each (set, name, value)
// is built once here.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_TRANSFORMS_ATTRIBUTESETS_H
#define WEFT_LIB_TRANSFORMS_ATTRIBUTESETS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <tuple>

namespace weft {

class AttributeSets {
public:
  explicit AttributeSets(mlir::MLIRContext *ctx) : ctx(ctx) {}

  /// `op->setAttr(name, value)` for a discardable attribute (a `weft.*`
  /// tag, never one of the op's own): the same attributes, built once per
  /// distinct set.
  void set(mlir::Operation *op, llvm::StringRef name, mlir::Attribute value) {
    mlir::DictionaryAttr from = op->getDiscardableAttrDictionary();
    mlir::StringAttr key = mlir::StringAttr::get(ctx, name);
    mlir::DictionaryAttr &to = built[{from, key, value}];
    if (!to) {
      mlir::NamedAttrList list(from);
      list.set(key, value);
      to = list.getDictionary(ctx);
    }
    op->setDiscardableAttrs(to);
  }

private:
  mlir::MLIRContext *ctx;
  llvm::DenseMap<
      std::tuple<mlir::DictionaryAttr, mlir::StringAttr, mlir::Attribute>,
      mlir::DictionaryAttr>
      built;
};

} // namespace weft

#endif // WEFT_LIB_TRANSFORMS_ATTRIBUTESETS_H
