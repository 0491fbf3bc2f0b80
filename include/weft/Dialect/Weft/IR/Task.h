//===- Task.h - which task of the step an op belongs to ---------*- C++ -*-===//
//
// A training step is a set of tasks: the forward F(i) and backward B(i) of
// each micro-batch i on each pipeline stage, and the optimizer update U
// after the last (GPipe: Huang et al. 2019; 1F1B: Narayanan et al. 2021,
// §2.2). An op's task is its `weft.task`, a #weft.task<kind, micro_batch,
// stage, chunk> the passes fill in as they go: the kind at weft-autodiff
// (B), weft-checkpoint (R) and weft-append-optimizer (U), the micro-batch
// at weft-accumulate-microbatches, the stage at weft-partition-pipeline.
// An op without one is forward work of no micro-batch or stage.
//
// Passes ask the typed questions below. The attribute verifies its own
// fields (non-negative indices, no micro-batch on an update); the dialect
// verifies that `weft.task` is one, that a pipelined function's
// (`weft.pipeline_stages`) ops lie within its stages and micro-batches,
// and that every op of such a stage function but its constants has one, on
// its stage (verifyTaskAttribute).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_TASK_H
#define WEFT_DIALECT_WEFT_IR_TASK_H

#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace weft {

/// The kind of an op's work: F, B, R (a forward recomputed in the
/// backward, which runs in its micro-batch's backward task), U; and W, a
/// weight gradient split from its backward (Qi et al. 2024, "Zero Bubble
/// Pipeline Parallelism", Section 2), which zero-bubble schedules run
/// later than its B.
enum class TaskKind { Forward, Backward, Recompute, Update, Weight };

/// The letter of a kind in #weft.task<...> and on the timeline.
char taskKindLetter(TaskKind kind);

/// The plan's and the timeline's phase of a kind's task: "forward",
/// "backward" (Backward and Recompute), "weight" (a zero-bubble schedule's
/// W) or "optimizer" (docs/plan-format.md, "Task bodies").
llvm::StringRef phaseName(TaskKind kind);

} // namespace weft

#define GET_ATTRDEF_CLASSES
#include "weft/Dialect/Weft/IR/WeftAttrs.h.inc"

namespace weft {

/// `op`'s task; null when it has none (forward work, no micro-batch or
/// stage).
inline TaskAttr taskOf(mlir::Operation *op) {
  return op->getAttrOfType<TaskAttr>(kTaskAttr);
}

/// The fields of a task, to change one and build the attribute again.
struct TaskFields {
  TaskKind kind = TaskKind::Forward;
  std::optional<int64_t> microBatch, stage;
  int64_t chunk = 0;

  static TaskFields of(TaskAttr task) {
    if (!task)
      return {};
    return {task.getKind(), task.getMicroBatch(), task.getStage(),
            task.getChunk()};
  }
  static TaskFields of(mlir::Operation *op) { return of(taskOf(op)); }
  /// The attribute; null for the default (forward, nothing else), which an
  /// op holds by having none.
  TaskAttr get(mlir::MLIRContext *ctx) const {
    if (kind == TaskKind::Forward && !microBatch && !stage && chunk == 0)
      return {};
    return TaskAttr::get(ctx, kind, microBatch, stage, chunk);
  }
};

/// Sets `op`'s task to `fields` (removes it for the default).
inline void setTask(mlir::Operation *op, const TaskFields &fields) {
  if (TaskAttr task = fields.get(op->getContext()))
    op->setAttr(kTaskAttr, task);
  else
    op->removeAttr(kTaskAttr);
}

/// The kind of `op`'s work.
inline TaskKind taskKindOf(mlir::Operation *op) {
  TaskAttr task = taskOf(op);
  return task ? task.getKind() : TaskKind::Forward;
}

inline bool isForward(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Forward;
}
/// A backward op proper: not a recomputed forward.
inline bool isBackward(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Backward;
}
/// Gradient work proper: Backward or Weight, not a recomputed forward.
inline bool isGradientKind(TaskKind kind) {
  return kind == TaskKind::Backward || kind == TaskKind::Weight;
}
inline bool isGradient(mlir::Operation *op) {
  return isGradientKind(taskKindOf(op));
}
inline bool isRecompute(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Recompute;
}
inline bool isUpdate(mlir::Operation *op) {
  return taskKindOf(op) == TaskKind::Update;
}
/// The kind of task that runs work of `kind`: Recompute runs in its
/// micro-batch's Backward. Weight is its own task: weft-schedule makes it
/// Backward under a schedule that does not split W (gpipe, 1f1b).
inline TaskKind scheduledKind(TaskKind kind) {
  return kind == TaskKind::Recompute ? TaskKind::Backward : kind;
}
inline TaskKind scheduledTaskKind(mlir::Operation *op) {
  return scheduledKind(taskKindOf(op));
}
/// Whether `op` runs in a micro-batch's backward half (Backward,
/// Recompute, Weight): after its forward, reading what the forward kept.
inline bool runsInBackward(mlir::Operation *op) {
  TaskKind kind = taskKindOf(op);
  return isGradientKind(kind) || kind == TaskKind::Recompute;
}

/// Marks `op`'s work as `kind`, keeping its micro-batch and stage.
inline void setTaskKind(mlir::Operation *op, TaskKind kind) {
  TaskFields fields = TaskFields::of(op);
  fields.kind = kind;
  setTask(op, fields);
}

/// `op` joins `from`'s task: the kind of task that runs `from` (unless
/// forward), its micro-batch and stage (and chunk) where it has them; `op`'s
/// own fields stay otherwise. For ops a pass adds beside another (a
/// collective's wait, a bucket's pieces, a moved gradient scale).
inline void joinTask(mlir::Operation *op, mlir::Operation *from) {
  TaskFields task = TaskFields::of(op), other = TaskFields::of(from);
  if (other.kind != TaskKind::Forward)
    task.kind = scheduledTaskKind(from);
  if (other.microBatch)
    task.microBatch = other.microBatch;
  if (other.stage) {
    task.stage = other.stage;
    task.chunk = other.chunk;
  }
  setTask(op, task);
}

/// The pipeline stage of an op (its task's), or of a stage function
/// (`weft.stage`), if it has one.
inline std::optional<int64_t> stageOf(mlir::Operation *op) {
  if (TaskAttr task = taskOf(op))
    return task.getStage();
  if (auto attr = op->getAttrOfType<mlir::IntegerAttr>(kStageAttr))
    return attr.getInt();
  return std::nullopt;
}

/// The pipeline rank that runs `stage` of the model function `func`: its
/// `weft.stage_ranks` entry, or the stage itself (one stage per rank).
inline int64_t rankOfStage(mlir::Operation *func, int64_t stage) {
  if (auto ranks =
          func->getAttrOfType<mlir::DenseI64ArrayAttr>(kStageRanksAttr);
      ranks && stage < int64_t(ranks.size()))
    return ranks[stage];
  return stage;
}

/// The micro-batch of an op (its task's), if it has one.
inline std::optional<int64_t> microBatchOf(mlir::Operation *op) {
  if (TaskAttr task = taskOf(op))
    return task.getMicroBatch();
  return std::nullopt;
}

/// Verifies `weft.task` (a #weft.task), a function's `weft.stage` and a
/// pipelined function's `weft.pipeline_stages` against its ops; success
/// for any other attribute.
mlir::LogicalResult verifyTaskAttribute(mlir::Operation *op,
                                        mlir::NamedAttribute attr);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_TASK_H
