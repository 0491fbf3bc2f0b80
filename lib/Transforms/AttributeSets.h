//===- AttributeSets.h - one attribute set on many ops ----------*- C++ -*-===//
//
// Private to the passes. Operation::setAttr builds and uniques a new
// attribute dictionary per op; a pass that tags millions of ops (the
// micro-batch copies of a GPT-3 step) with one of a few values paid that
// per op. Ops share few distinct attribute sets: each (set, change of the
// task) is built once here.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_TRANSFORMS_ATTRIBUTESETS_H
#define WEFT_LIB_TRANSFORMS_ATTRIBUTESETS_H

#include "weft/Dialect/Weft/IR/Task.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"

#include <tuple>

namespace weft {

class AttributeSets {
public:
  explicit AttributeSets(mlir::MLIRContext *ctx) : ctx(ctx) {}

  /// The field of an op's task `setTaskField` changes.
  enum class TaskField { Kind, MicroBatch, Stage };

  /// Sets one field of `op`'s task (Kind: a TaskKind's value); the other
  /// fields and attributes stay.
  void setTaskField(mlir::Operation *op, TaskField field, int64_t value) {
    mlir::DictionaryAttr from = op->getDiscardableAttrDictionary();
    mlir::DictionaryAttr &to = builtTasks[{from, field, value}];
    if (!to) {
      TaskFields task = TaskFields::of(from.getAs<TaskAttr>(kTaskAttr));
      switch (field) {
      case TaskField::Kind:
        task.kind = static_cast<TaskKind>(value);
        break;
      case TaskField::MicroBatch:
        task.microBatch = value;
        break;
      case TaskField::Stage:
        task.stage = value;
        break;
      }
      mlir::NamedAttrList list(from);
      if (TaskAttr attr = task.get(ctx))
        list.set(kTaskAttr, attr);
      else
        list.erase(kTaskAttr);
      to = list.getDictionary(ctx);
    }
    op->setDiscardableAttrs(to);
  }

private:
  mlir::MLIRContext *ctx;
  llvm::DenseMap<std::tuple<mlir::DictionaryAttr, TaskField, int64_t>,
                 mlir::DictionaryAttr>
      builtTasks;
};

} // namespace weft

#endif // WEFT_LIB_TRANSFORMS_ATTRIBUTESETS_H
