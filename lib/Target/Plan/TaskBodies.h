//===- TaskBodies.h - a program's micro-batch work as task bodies -*- C++
//-*-===//
//
// Rewrites an explicit program (every micro-batch's instructions unrolled)
// into the task form of docs/plan-format.md, "Task bodies": each distinct
// task instance written once as a body, the program's order as a list of
// (body, micro-batch), and each micro-batch's buffers as a frame whose
// offsets the slot memory plan (MemoryPlan.h) makes alike across
// micro-batches.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_TARGET_PLAN_TASKBODIES_H
#define WEFT_LIB_TARGET_PLAN_TASKBODIES_H

#include "weft/Analysis/MemoryPlan.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace weft {

/// Where one buffer of an explicit program lives.
struct BufferHome {
  /// The micro-batch whose frame holds it (its defining op and every op
  /// reading it work on that micro-batch), or -1: a program buffer.
  int64_t microBatch = -1;
  /// Its slot group (MemoryPlan::slots) when carried, else -1.
  int slotGroup = -1;
  /// Its offset as the micro-batch's first slot would hold it.
  int64_t slotZeroOffset = 0;
};

/// A task instance of a program: a maximal run of instructions of one phase
/// and one micro-batch.
struct TaskInstance {
  std::string phase;
  int64_t microBatch = 0;
  /// Its instructions: [first, first + count) of the program's list.
  size_t first = 0, count = 0;
  /// The earlier instance (itself no repeat) whose instructions this one
  /// runs on its own micro-batch's buffers (the same ids within their
  /// frames), or -1. A repeat's instructions are not in the program's list:
  /// `patches` holds (index in the instance, instruction) of those whose
  /// integers may differ from the repeated instance's; the others are its.
  int64_t repeats = -1;
  std::vector<std::pair<size_t, nlohmann::json>> patches;
  /// Its model chunk, where the program's rank runs several; else -1 (and
  /// the plan says none).
  int64_t chunk = -1;
};

/// Writes each instruction's `phase`, `micro_batch` and `chunk` (its
/// instance's; no chunk where it is -1)
/// into the explicit `program`, whose `instances` repeat none.
void addTaskFields(nlohmann::json &program,
                   const std::vector<TaskInstance> &instances);

/// Rewrites `program` (explicit: `buffers` with ids 0..n-1 and the
/// `instructions` of `instances`, TaskInstance) into the task form when it
/// works on two or more micro-batches, moving its buffers and instructions
/// into frames and bodies; `homes` has one entry per buffer, `slots` is the
/// memory plan's slot groups. `frameRepeats[m]`, where it is >= 0, is the
/// earlier micro-batch whose frame is m's (m's buffers are null in
/// `buffers`). Leaves `program` explicit and returns false for one
/// micro-batch, or when a buffer views or an instruction reads a buffer of
/// another micro-batch's frame (the task form cannot say it; there is no
/// repeat of an instance or a frame then).
bool writeTaskBodies(nlohmann::json &program,
                     std::vector<TaskInstance> &instances,
                     const std::vector<int64_t> &frameRepeats,
                     const std::vector<BufferHome> &homes,
                     const std::vector<MemoryPlan::SlotGroup> &slots);

} // namespace weft

#endif // WEFT_LIB_TARGET_PLAN_TASKBODIES_H
