//===- Plan.h - the execution plan as the runtime reads it ------*- C++ -*-===//
//
// Version 2 of the plan format (docs/plan-format.md, docs/plan.schema.json).
// loadPlan validates everything the executor relies on, and rejects a plan
// it does not understand with an Error naming the offending field, e.g.
// "plan.json: programs[0].buffers[3].offset: 4096 + 512 bytes exceeds
// arena_bytes 4096".
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_PLAN_H
#define WEFT_RUNTIME_PLAN_H

#include "weft/runtime/KernelSpec.h"
#include "weft/runtime/PlanTasks.h"
#include "weft/runtime/PlanView.h"
#include "weft/runtime/Tensor.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weft::rt {

struct BufferDesc {
  int64_t id = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t bytes = 0;   ///< numel * dtype size
  int64_t offset = 0;  ///< byte offset in the rank's arena
  std::string kind;    ///< input | param | state | constant | activation
  int64_t viewOf = -1; ///< buffer whose bytes this one shares, or -1
};

/// Which slice of an ONNX initializer a rank's parameter holds (tensor
/// parallelism): dimension `dim` of the full tensor (size n) read as
/// [blocks, count, n / (blocks count)], this rank holding [:, index, :].
struct ShardDesc {
  int64_t dim = 0, blocks = 1, index = 0, count = 1;
};

/// Which piece of a tensor a ZeRO-sharded buffer holds (the flat split):
/// the tensor of shape `shape` (after any `ShardDesc`) flattened and
/// zero-padded to count s elements, s = ceil(n / count), this rank
/// holding elements [index s, index s + s). `count` is the data axis's
/// size and `index` the rank's data coordinate.
struct FlatShardDesc {
  std::vector<int64_t> shape;
  int64_t index = 0, count = 1;
  int64_t elements() const; ///< n, saturating at INT64_MAX
  int64_t piece() const;    ///< s (count >= 1)
};

struct NamedBuffer {
  std::string name;
  int64_t buffer = 0;
  /// params: the tensor-parallel slice; inputs: the data-parallel
  /// replica's rows (dim 0 over the data axis); none: the whole tensor
  std::optional<ShardDesc> shard;
  /// params and optimizer state sharded by ZeRO: this rank's piece of the
  /// (tensor-parallel slice of the) tensor
  std::optional<FlatShardDesc> flatShard;
  /// optimizer state: the parameter (initializer) a mixed-precision master
  /// copy starts from, exactly (f32); empty: the state starts at zero
  std::string init;
  /// optimizer state: explicit f32 starting values, one per element (the
  /// loss scaler's [2^16, 0, 0]); empty: zeros or `init`
  std::vector<double> fill;
};

struct ConstantDesc {
  int64_t buffer = 0;
  std::string bytes; ///< decoded little-endian element bytes
};

struct Instruction {
  /// "compute"; a transfer: "isend", "irecv" (post), "wait_send",
  /// "wait_recv" (complete); or a collective over one mesh axis, posted:
  /// "all_reduce" (sum or max), "all_gather" or "reduce_scatter" (sum;
  /// along tensor dimension `dim`, rank t's part the t-th), and completed
  /// by the "wait_collective" of its tag (inputs: the buffers it keeps
  /// live; outputs: views of the result, for liveness).
  std::string op;
  std::string kernel; ///< compute: e.g. "matmul"
  std::string name;   ///< the ONNX node, for traces and errors
  std::string phase;  ///< "forward"
  int64_t microBatch = 0;
  /// The model chunk it belongs to, in a plan whose ranks run several
  /// (interleaved 1F1B, ZB-V); -1 in others.
  int64_t chunk = -1;
  std::vector<int64_t> inputs, outputs; ///< buffer ids
  /// compute: the attributes as checked against the kernel's entry in the
  /// specification table (KernelSpec.h), and the instruction's cost.
  KernelAttrs attrs;
  KernelCost cost;
  int64_t peer = -1; ///< isend/irecv: the other rank
  /// transfers: matches an isend with its irecv; collectives and their
  /// waits: the position in the group's sequence of collectives (the same
  /// on every member).
  int64_t tag = -1;
  /// collectives: the mesh axis whose ranks (the others' coordinates
  /// equal) form the group, and all_reduce's "sum" or "max".
  std::string axis, reduction = "sum";
  /// all_gather, reduce_scatter: the dimension of the whole (gathered,
  /// scattered) tensor the group's parts are laid along.
  int64_t dim = -1;
  /// isend, irecv: the bytes moved (the buffer's).
  int64_t bytes = 0;
};

/// A rank's view of its program (PlanView.h), checked and decoded.
struct RankPlan {
  int64_t rank = 0;
  /// The field the rank's instructions come from, for messages:
  /// "programs[k]" ("rank r: programs[k]" when k serves several ranks).
  std::string path;
  std::string where() const {
    return path.empty() ? "ranks[" + std::to_string(rank) + "]" : path;
  }
  /// A task-form program's (PlanTasks.h): where each buffer and instruction
  /// was written, shared by the program's ranks; null for the explicit form.
  std::shared_ptr<const TaskOrigins> origins;
  /// Instruction `i`'s field, for messages: "programs[k].instructions[i]",
  /// or "programs[k].bodies[b].instructions[j] (tasks[t], micro-batch m)".
  std::string instructionWhere(size_t i) const {
    i = explicitIndexOf(i);
    if (!origins)
      return where() + ".instructions[" + std::to_string(i) + "]";
    return where() + "." + origins->instructionField(i) +
           origins->instructionNote(i);
  }
  std::vector<std::pair<std::string, int64_t>> coords; ///< mesh axis -> index
  /// The coordinate along `axis` (0 when the plan's mesh lacks it).
  int64_t coord(const std::string &axis) const {
    for (const auto &[name, index] : coords)
      if (name == axis)
        return index;
    return 0;
  }
  int64_t arenaBytes = 0;
  std::vector<BufferDesc> buffers;
  std::vector<NamedBuffer> params, state, inputs, outputs;
  /// Optimizer state (Adam moments, momentum buffers): zero at step 1.
  std::vector<NamedBuffer> optimizerState;
  std::vector<ConstantDesc> constants;
  std::vector<Instruction> instructions;
  /// False for the other ranks of a one-rank load (loadPlan's `onlyRank`):
  /// such a rank holds its coordinates, named lists and its program's
  /// buffers (not its micro-batches' frames), and of its instructions only
  /// the transfers (isend, irecv and their waits).
  bool complete = true;
  /// An incomplete rank's: each instruction's index in its program's
  /// explicit form (empty: the same index).
  std::vector<size_t> explicitIndex;
  size_t explicitIndexOf(size_t i) const {
    return explicitIndex.empty() ? i : explicitIndex[i];
  }
};

struct InputDesc {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::optional<int64_t> indexBound; ///< valid integer values are [0, bound)
};

/// A factor of a mesh axis (ZeRO's groups smaller than the data axis): a
/// rank's coordinate along it is (its coordinate along `of` / stride) %
/// size; its group is the ranks of its `of` group that differ only there.
/// ZeRO's groups of S: data_shard (size S, stride 1) and data_replica
/// (size D / S, stride S).
struct SubAxis {
  std::string name, of;
  int64_t size = 1, stride = 1;
};

struct Plan {
  std::string path; ///< where the plan was read from, for messages
  int64_t version = 0;
  std::string modelPath, modelSha256;
  std::vector<std::pair<std::string, int64_t>> meshAxes;
  std::vector<SubAxis> subAxes; ///< mesh.sub_axes, checked in checkMesh
  int64_t microBatches = 1;
  int64_t globalBatch = 1;
  std::vector<InputDesc> inputs, outputs;
  std::vector<RankPlan> ranks;
  /// A one-rank load's rank (loadPlan's `onlyRank`), or -1: every rank
  /// complete.
  int64_t loadedRank = -1;

  /// Ranks along mesh axis or sub-axis `axis` (1 when the mesh lacks it).
  int64_t axisSize(const std::string &axis) const {
    for (const auto &[name, size] : meshAxes)
      if (name == axis)
        return size;
    for (const SubAxis &sub : subAxes)
      if (sub.name == axis)
        return sub.size;
    return 1;
  }
  /// `rank`'s coordinate along mesh axis or sub-axis `axis`.
  int64_t coord(const RankPlan &rank, const std::string &axis) const {
    for (const SubAxis &sub : subAxes)
      if (sub.name == axis)
        return rank.coord(sub.of) / sub.stride % sub.size;
    return rank.coord(axis);
  }
  /// The group of `rank` along mesh axis or sub-axis `axis`, as a key: its
  /// coordinates on the other axes (-1 on `axis`; along a sub-axis, its
  /// axis' coordinate without the sub-axis' component). Ranks of one group
  /// have equal keys.
  std::vector<int64_t> groupOf(const RankPlan &rank,
                               const std::string &axis) const;
  /// The axis ZeRO's pieces are over: data_shard when the plan has ZeRO
  /// groups smaller than the data axis, else data.
  std::string zeroAxis() const {
    for (const SubAxis &sub : subAxes)
      if (sub.name == "data_shard")
        return sub.name;
    return "data";
  }
};

/// Reads and validates a plan: every field, every compute instruction
/// against its kernel's entry in the specification table (checkKernel), the
/// transfers' pairing and order (the n-th isend from rank a to rank b is
/// b's n-th irecv from a), the mesh (ranks' coordinates, collectives' axes and
/// groups, parameter shards) and the instruction order
/// (checkInstructionOrder).
/// `knownKernel` says whether the backend implements a kernel of the table.
/// Throws Error naming the field on any problem.
///
/// `onlyRank` >= 0 loads what the process of that rank needs (weft-run with
/// several ranks): its program parsed and checked in full (every field,
/// kernel specification and the order checks of its rank), every rank's
/// transfers paired and simulated for deadlock, every rank's shards checked;
/// the other ranks' compute and collectives are left to their own
/// processes. That holds only where every collective group of the rank runs
/// its program (the members' collectives are then its own, in its order)
/// and none of its collectives holds a coordinate expression; otherwise, or
/// for a rank the plan lacks, every rank is loaded. `weft-run --check`
/// loads every rank. A GPT-3 175B rank loads in 0.5-0.7 s at 0.25 GB instead
/// of the whole plan's 8-10 s at 3.7 GB (bench/compile_scale.py).
Plan loadPlan(const std::string &path,
              const std::function<bool(const std::string &)> &knownKernel,
              int64_t onlyRank = -1);

/// Same, from JSON text (`path` names it in messages).
Plan parsePlan(const std::string &text, const std::string &path,
               const std::function<bool(const std::string &)> &knownKernel,
               int64_t onlyRank = -1);

/// The order checks parsePlan runs last (runtime/lib/PlanOrder.cpp). Per
/// rank: every buffer an instruction reads was written before (or is a
/// step argument), no instruction reads or writes the bytes of a receive
/// before its wait_recv or overwrites a send's before its wait_send, nor
/// reads a collective's result or writes its buffers before its
/// wait_collective, each wait matches its post's kind, every post is
/// waited for. Across ranks: a rendezvous simulation (a wait completes once
/// the peer has posted the matching transfer, or every member of the group
/// its collective) finds plans that would deadlock. Throws Error naming
/// the instruction, or each blocked rank's instruction. In a one-rank load,
/// the complete rank's order and every rank's transfers (the group
/// condition of loadPlan makes its collectives complete as they would on one
/// rank).
void checkInstructionOrder(const Plan &plan);

/// The plan's point-to-point channels: every (sender, receiver) rank pair
/// with at least one isend, sorted. The loader has checked that each
/// channel's transfers are posted in one order at both ends.
std::vector<std::pair<int64_t, int64_t>> transferChannels(const Plan &plan);

/// Decodes standard base64 (RFC 4648); throws Error on malformed input.
std::string decodeBase64(const std::string &text);

} // namespace weft::rt

#endif // WEFT_RUNTIME_PLAN_H
