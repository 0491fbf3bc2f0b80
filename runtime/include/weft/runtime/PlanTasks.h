//===- PlanTasks.h - a program's task form, expanded ------------*- C++ -*-===//
//
// A version-2 program holds its work either explicitly (`instructions`:
// every micro-batch's instructions unrolled) or in the task form
// (docs/plan-format.md, "Task bodies"): the work of one micro-batch in one
// task (forward, backward, ...) written once as a body and instantiated per
// micro-batch, the way a pipeline schedule is a list of (task, micro-batch)
// steps (GPipe, 1F1B). Its fields:
//
//   micro_batch_slots   [{"count": K, "bytes": S}, ...]: slot groups;
//                       micro-batch m's frame buffers of group g lie at
//                       offset + (m mod K) * S
//   frames              [[template, ...], ...]: buffer records without id,
//                       placed in slot group g by `slots: g`; a template's
//                       view_of is a program buffer (< n) or n + j', the
//                       frame's template j' < j
//   micro_batch_frames  [f(0), ..., f(M-1)]: each micro-batch's frame
//   bodies              [{"phase", "instructions"}]: instructions without
//                       phase and micro_batch; ids < n are the program's
//                       buffers, n + j the micro-batch frame's template j;
//                       collective tags count from the task's first post;
//                       {"coord"?, "times"?, "plus"?, "per_micro_batch"}
//                       adds per_micro_batch * m to an expression
//   tasks               [{"body": b, "micro_batch": m}] in execution order
//
// Expansion writes the explicit program the task form stands for; the
// loader and the views run on it, so every check of the explicit form
// applies unchanged.
//
// MLIR-free: weftc links it (weft_ops).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_PLANTASKS_H
#define WEFT_RUNTIME_PLANTASKS_H

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace weft::rt {

/// Where a buffer or instruction of an expanded program was written, as
/// indices: a GPT-3 stage expands to millions of instructions, and the
/// text is made only for a message.
struct TaskOrigin {
  /// The frame (a buffer) or body (an instruction) it came from; -1 for a
  /// program buffer (`index` in `buffers`).
  int64_t from = -1;
  int64_t index = 0;       ///< the template or instruction in it
  int64_t task = -1;       ///< the task instance (an instruction)
  int64_t microBatch = -1; ///< the micro-batch (a frame buffer, a task)
  int64_t chunk = -1;      ///< the task's model chunk, if the plan has them
};
class LazyProgram;

/// One origin per buffer and per instruction of an expanded program.
struct TaskOrigins {
  std::vector<TaskOrigin> buffers, instructions;
  /// A lazy expansion's (expandTasksLazily): the task-form program,
  /// from which buffer(i) and instruction(i) write one element of the
  /// explicit program; null for an eager one.
  std::shared_ptr<const LazyProgram> lazy;
  /// Explicit buffer or instruction `i` as expandTasks writes it, made on
  /// first use and kept (a Field refers to it). Requires `lazy`; throws
  /// Error where the eager expansion would.
  const nlohmann::json &buffer(size_t i) const;
  const nlohmann::json &instruction(size_t i) const;
  /// Whether instruction `i`'s body instruction holds an expression (a
  /// coordinate or per_micro_batch): instances of one that does not differ
  /// only in ids, micro-batch and collective tags. Requires `lazy`.
  bool holdsExpression(size_t i) const;
  /// Collective posts before instruction `i`'s task instance; its frame's
  /// first buffer id; and frame buffer `i`'s offset at its micro-batch
  /// (false if it overflows). Require `lazy`.
  int64_t postsBefore(size_t i) const;
  int64_t firstFrameBuffer(int64_t microBatch) const;
  int64_t frameOf(int64_t microBatch) const;
  bool placedOffset(size_t i, int64_t &offset) const;
  /// Instruction `j` of body `b`, as the task form writes it.
  const nlohmann::json &bodyInstruction(int64_t b, int64_t j) const;

private:
  /// What buffer() and instruction() wrote, by index.
  mutable struct {
    std::map<size_t, nlohmann::json> buffers, instructions;
  } made;

public:
  /// The field, relative to the program: "buffers[3]", "frames[1][0]",
  /// "bodies[2].instructions[5]".
  std::string bufferField(size_t i) const;
  std::string instructionField(size_t i) const;
  /// The instance: " (micro-batch 3)", " (tasks[7], micro-batch 3)"; empty
  /// for a program buffer.
  std::string bufferNote(size_t i) const;
  std::string instructionNote(size_t i) const;
};

/// Whether `program` is in the task form (holds any of its fields).
bool isTaskForm(const nlohmann::json &program);

/// The explicit program `program` stands for: `program` itself when it is
/// explicit; otherwise its buffers followed by every micro-batch's frame
/// (in micro-batch order, slotted offsets placed), and every task's body
/// instructions (in task order, with the task's phase and micro-batch, ids
/// and collective tags rebased, per_micro_batch evaluated). `path` names the
/// program in messages ("programs[1]", "rank 3: programs[1]"). Throws Error
/// ("FILE: PATH.FIELD: message") on a malformed task form, both forms at
/// once, an id past the frame, a negative tag or an overflow; checks nothing
/// the explicit form's loader checks. `origins`, when given, receives where
/// each buffer and instruction was written (left empty for an explicit
/// program).
///
/// expandTasksLazily: the program's structure is checked and
/// `origins` filled, but the result holds only the program's buffers and
/// no instructions: `origins->buffer(i)` and `origins->instruction(i)` write
/// the others one at a time (the loader checks each body once per frame and
/// copies it to the other instances: a GPT-3 stage's explicit program is
/// gigabytes of JSON). The lazy origins keep `program` (moved in).
nlohmann::json expandTasks(const nlohmann::json &program,
                           const std::string &file, const std::string &path,
                           TaskOrigins *origins = nullptr);
nlohmann::json expandTasksLazily(nlohmann::json program,
                                 const std::string &file,
                                 const std::string &path, TaskOrigins &origins);

/// `plan` with every task-form program expanded (`weft-run --explicit`);
/// anything else unchanged and unchecked.
nlohmann::json explicitPlan(const nlohmann::json &plan,
                            const std::string &file);

} // namespace weft::rt

#endif // WEFT_RUNTIME_PLANTASKS_H
