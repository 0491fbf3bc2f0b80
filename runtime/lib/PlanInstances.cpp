//===- PlanInstances.cpp - task instances as copies of the first ---------===//
//
// A lazily expanded task-form program (PlanTasks.h) is parsed by parseRank:
// each frame template and body instruction is parsed and checked at its
// first instance in a frame, and its other instances there are copies with
// what differs moved and re-checked (PlanField.h).
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/KernelSpec.h"
#include "weft/runtime/Plan.h"

#include "PlanField.h"

namespace weft::rt::detail {

std::vector<OperandPlacement> placed(const RankPlan &rank,
                                     const std::vector<int64_t> &ids) {
  std::vector<OperandPlacement> out;
  for (int64_t id : ids) {
    const BufferDesc &b = rank.buffers[id];
    out.push_back({{b.dtype, b.shape}, b.offset});
  }
  return out;
}

bool placeFrameBuffer(const BufferDesc &proto, int64_t m0, size_t i,
                      const TaskOrigins &lazy, RankPlan &rank) {
  BufferDesc d = proto;
  d.id = i;
  if (!lazy.placedOffset(i, d.offset))
    return false;
  int64_t from = lazy.firstFrameBuffer(m0);
  if (d.viewOf >= from)
    d.viewOf += lazy.firstFrameBuffer(lazy.buffers[i].microBatch) - from;
  if (d.offset % dtypeSize(d.dtype) != 0 || d.offset > rank.arenaBytes ||
      d.bytes > rank.arenaBytes - d.offset)
    return false;
  if (d.viewOf >= 0 &&
      (d.viewOf >= d.id || rank.buffers[d.viewOf].offset != d.offset))
    return false;
  rank.buffers.push_back(std::move(d));
  return true;
}

bool copyBodyInstruction(BodyInstruction &proto, size_t i,
                         const TaskOrigins &lazy, RankPlan &rank) {
  Instruction d = proto.parsed;
  const TaskOrigin &o = lazy.instructions[i];
  int64_t shift = lazy.firstFrameBuffer(o.microBatch) - proto.firstFrameBuffer;
  for (auto *ids : {&d.inputs, &d.outputs})
    for (int64_t &id : *ids)
      if (id >= proto.firstFrameBuffer)
        id += shift;
  d.microBatch = o.microBatch;
  d.chunk = o.chunk;
  if ((isCollective(d.op) || isCollectiveWait(d.op)) &&
      (__builtin_add_overflow(d.tag, lazy.postsBefore(i) - proto.postsBefore,
                              &d.tag) ||
       d.tag < 0))
    return false;
  if (proto.spec) {
    // The operands' types are the instance's in the first frame: only
    // their offsets may make a different placement.
    std::vector<int64_t> offsets;
    offsets.reserve(d.inputs.size() + d.outputs.size());
    for (auto *ids : {&d.inputs, &d.outputs})
      for (int64_t id : *ids)
        offsets.push_back(rank.buffers[id].offset);
    if (!proto.checkedPlacements.count(offsets)) {
      try {
        checkKernelPlacement(*proto.spec, placed(rank, d.inputs),
                             placed(rank, d.outputs));
      } catch (const Error &) {
        return false;
      }
      proto.checkedPlacements.insert(std::move(offsets));
    }
  }
  rank.instructions.push_back(std::move(d));
  return true;
}

} // namespace weft::rt::detail
