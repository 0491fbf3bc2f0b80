//===- FuncUtils.h - small helpers the weft passes share ------*- C++ -*-===//
#ifndef WEFT_TRANSFORMS_FUNCUTILS_H
#define WEFT_TRANSFORMS_FUNCUTILS_H

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <optional>

namespace weft {

/// A ranked tensor of floats: a value that can carry a gradient.
inline bool isFloatTensor(mlir::Value v) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
  return type && llvm::isa<mlir::FloatType>(type.getElementType());
}

/// Sets `op`'s result types to those it infers from its operands and
/// attributes as they are now (a pass changed them); fails, setting
/// nothing, when the inference does.
inline mlir::LogicalResult reinferResultTypes(mlir::InferTypeOpInterface op) {
  llvm::SmallVector<mlir::Type> types;
  mlir::Operation *raw = op;
  if (mlir::failed(op.inferReturnTypes(
          raw->getContext(), raw->getLoc(), raw->getOperands(),
          raw->getRawDictionaryAttrs(), raw->getPropertiesStorage(),
          raw->getRegions(), types)))
    return mlir::failure();
  for (auto [result, type] : llvm::zip(raw->getResults(), types))
    result.setType(type);
  return mlir::success();
}

/// `v` as `type` (a reshape: a view), created by `b` with `like`'s
/// bookkeeping (its `weft.task`: weft-checkpoint takes an op without one
/// for a forward one); `v` itself when it has that type.
inline mlir::Value viewAs(mlir::OpBuilder &b, mlir::Value v, mlir::Type type,
                          mlir::Operation *like) {
  if (v.getType() == type)
    return v;
  auto reshape = ReshapeOp::create(
      b, v.getLoc(), v, llvm::cast<mlir::RankedTensorType>(type).getShape());
  reshape->setDiscardableAttrs(like->getDiscardableAttrDictionary());
  return reshape;
}

/// Makes `func` return `results` (with `resultAttrs`, one per result):
/// replaces its return op and updates its type.
inline void
replaceReturn(mlir::func::FuncOp func, mlir::ValueRange results,
              llvm::ArrayRef<mlir::DictionaryAttr> resultAttrs) {
  mlir::Operation *ret = func.getBody().front().getTerminator();
  mlir::OpBuilder b(ret);
  mlir::func::ReturnOp::create(b, ret->getLoc(), results);
  ret->erase();
  func.setType(mlir::FunctionType::get(func.getContext(),
                                       func.getArgumentTypes(),
                                       mlir::TypeRange(results)));
  func.setAllResultAttrs(resultAttrs);
}

/// A rank-0 constant `value` of `type`'s element type (`type` a tensor
/// type or an element type): a factor that broadcasts against anything.
inline mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Type type, double value) {
  mlir::Type element = mlir::getElementTypeOrSelf(type);
  return ConstantOp::create(
      b, loc,
      mlir::DenseElementsAttr::get(mlir::RankedTensorType::get({}, element),
                                   b.getFloatAttr(element, value)));
}

/// `func`'s parameter updates (weft.adamw, weft.sgd) in program order,
/// grouped by the pipeline rank that runs them, each group keyed by the
/// rank's lowest stage (no stage: one group, nullopt). The stages of a
/// rank's model chunks share what is computed once per rank for its
/// updates (GradScaler's verdict, the gradients' norm).
inline std::map<std::optional<int64_t>, llvm::SmallVector<mlir::Operation *>>
updatesByRank(mlir::func::FuncOp func) {
  llvm::SmallVector<mlir::Operation *> updates;
  std::map<int64_t, int64_t> firstStageOfRank;
  for (mlir::Operation &op : func.getBody().front())
    if (llvm::isa<AdamWOp, SGDOp>(op)) {
      updates.push_back(&op);
      if (std::optional<int64_t> stage = stageOf(&op)) {
        auto [it, fresh] =
            firstStageOfRank.try_emplace(rankOfStage(func, *stage), *stage);
        it->second = std::min(it->second, *stage);
      }
    }
  std::map<std::optional<int64_t>, llvm::SmallVector<mlir::Operation *>> ranks;
  for (mlir::Operation *update : updates) {
    std::optional<int64_t> stage = stageOf(update);
    if (stage)
      stage = firstStageOfRank.at(rankOfStage(func, *stage));
    ranks[stage].push_back(update);
  }
  return ranks;
}

/// Moves `ops` that precede `after`, and the ops before it that read them
/// (transitively), after it in their order: moving an op later keeps its
/// operands before it, and its users follow it. For a step-wide value the
/// updates must wait for (GradScaler's verdict, the gradients' norm).
inline void sinkAfter(mlir::Operation *after,
                      llvm::ArrayRef<mlir::Operation *> ops) {
  mlir::Block *body = after->getBlock();
  llvm::SetVector<mlir::Operation *> sink;
  for (mlir::Operation *op : ops)
    if (op->isBeforeInBlock(after))
      sink.insert(op);
  for (size_t i = 0; i < sink.size(); ++i)
    for (mlir::Operation *user : sink[i]->getUsers())
      if (user->getBlock() == body && user->isBeforeInBlock(after) &&
          !llvm::isa<mlir::func::ReturnOp>(user))
        sink.insert(user);
  llvm::SmallVector<mlir::Operation *> ordered(sink.begin(), sink.end());
  llvm::sort(ordered, [](mlir::Operation *a, mlir::Operation *c) {
    return a->isBeforeInBlock(c);
  });
  for (mlir::Operation *op : ordered) {
    op->moveAfter(after);
    after = op;
  }
}

} // namespace weft

#endif // WEFT_TRANSFORMS_FUNCUTILS_H
