//===- Task.h - which task of the step an op belongs to ---------*- C++ -*-===//
//
// A training step is a set of tasks: the forward F(i) and backward B(i) of
// each micro-batch i on each pipeline stage, and the optimizer update U
// after the last (GPipe: Huang et al. 2019; 1F1B: Narayanan et al. 2021,
// §2.2). An op's task is held by discardable attributes the passes set:
//
//   weft.phase       "backward" (weft-autodiff) or "optimizer"
//                    (weft-append-optimizer); absent (or "forward"): forward
//   weft.recompute   a forward recomputed in the backward (weft-checkpoint)
//   weft.micro_batch the micro-batch, 0-based (weft-accumulate-microbatches)
//   weft.stage       the pipeline stage, 0-based (weft-partition-pipeline)
//
// Passes ask the typed questions below, never compare the text; the
// dialect verifies each attribute (WeftDialect::verifyOperationAttribute:
// a known phase, a recompute mark only in the backward, no micro-batch on
// an update, indices in range of the function's stages and micro-batches).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_TASK_H
#define WEFT_DIALECT_WEFT_IR_TASK_H

#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace weft {

/// The kind of an op's work. A Recompute op (a forward cloned into the
/// backward) runs in its micro-batch's backward task.
enum class TaskKind { Forward, Backward, Recompute, Update };

/// The plan's and the timeline's phase of a kind's task: "forward",
/// "backward" (Backward and Recompute) or "optimizer"
/// (docs/plan-format.md, "Task bodies").
inline llvm::StringRef phaseName(TaskKind kind) {
  switch (kind) {
  case TaskKind::Forward:
    return "forward";
  case TaskKind::Backward:
  case TaskKind::Recompute:
    return "backward";
  case TaskKind::Update:
    return "optimizer";
  }
  llvm_unreachable("unknown task kind");
}

/// The kind of `op`'s work, from weft.phase and weft.recompute.
inline TaskKind taskKindOf(mlir::Operation *op) {
  auto phase = op->getAttrOfType<mlir::StringAttr>(kPhaseAttr);
  if (!phase || phase.getValue() == "forward")
    return TaskKind::Forward;
  if (phase.getValue() == "optimizer")
    return TaskKind::Update;
  return op->hasAttr(kRecomputeAttr) ? TaskKind::Recompute : TaskKind::Backward;
}

inline bool isForward(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Forward;
}
/// A backward op proper: not a recomputed forward.
inline bool isBackward(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Backward;
}
inline bool isRecompute(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Recompute;
}
inline bool isUpdate(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Update;
}
/// Whether `op` runs in a micro-batch's backward task (Backward or
/// Recompute).
inline bool runsInBackward(mlir::Operation *op) {
  TaskKind kind = taskKindOf(op);
  return kind == TaskKind::Backward || kind == TaskKind::Recompute;
}

/// The kind of task that runs `op`'s work: a Recompute op runs in its
/// micro-batch's Backward task.
inline TaskKind scheduledTaskKind(mlir::Operation *op) {
  TaskKind kind = taskKindOf(op);
  return kind == TaskKind::Recompute ? TaskKind::Backward : kind;
}

/// The phase attribute that marks `kind` (null for Forward, which is the
/// absence of one); Recompute also needs weft.recompute (setTaskKind).
inline mlir::StringAttr phaseAttr(mlir::MLIRContext *ctx, TaskKind kind) {
  return kind == TaskKind::Forward
             ? mlir::StringAttr()
             : mlir::StringAttr::get(ctx, phaseName(kind));
}

/// Marks `op`'s work as `kind`, replacing its phase and recompute marks.
inline void setTaskKind(mlir::Operation *op, TaskKind kind) {
  if (mlir::StringAttr phase = phaseAttr(op->getContext(), kind))
    op->setAttr(kPhaseAttr, phase);
  else
    op->removeAttr(kPhaseAttr);
  if (kind == TaskKind::Recompute)
    op->setAttr(kRecomputeAttr, mlir::UnitAttr::get(op->getContext()));
  else
    op->removeAttr(kRecomputeAttr);
}

/// The pipeline stage of an op (`weft.stage`), if it has one.
inline std::optional<int64_t> stageOf(mlir::Operation *op) {
  if (auto attr = op->getAttrOfType<mlir::IntegerAttr>(kStageAttr))
    return attr.getInt();
  return std::nullopt;
}

/// The micro-batch of an op (`weft.micro_batch`), if it has one.
inline std::optional<int64_t> microBatchOf(mlir::Operation *op) {
  if (auto attr = op->getAttrOfType<mlir::IntegerAttr>(kMicroBatchAttr))
    return attr.getInt();
  return std::nullopt;
}

/// Verifies a task attribute (`weft.phase`, `weft.recompute`,
/// `weft.micro_batch`, `weft.stage`, and a pipelined function's
/// `weft.pipeline_stages` against its ops) on `op`; success for any other.
mlir::LogicalResult verifyTaskAttribute(mlir::Operation *op,
                                        mlir::NamedAttribute attr);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_TASK_H
