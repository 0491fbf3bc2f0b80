//===- TaskOrder.h - each rank's pipeline task order, simulated -*- C++ -*-===//
//
// The order in which each pipeline rank runs its tasks under every schedule
// weft knows, with several model chunks per rank and the backward split
// into B (input gradient) and W (weight gradient) where the schedule does,
// and a task-level simulation of those orders: step time, bubble, and the
// activations each rank holds. The schedules (docs/pipeline.md):
//
// - GPipe, 1F1B: Schedule.h's stageTasks, one chunk per rank, B includes W.
// - Interleaved 1F1B (Narayanan et al. 2021, Section 2.2.2; current
//   Megatron-LM's `forward_backward_pipelining_with_interleaving` with
//   micro-batch groups of P, whose warm-up is clamped to MV where older
//   releases ran every forward first when M = P): V chunks per rank,
//   chunk c of rank r is stage c*P + r; rank r runs
//   min(2(P-1-r) + (V-1)P, MV) warm-up forwards, then one forward and one
//   backward in turn; the k-th forward is chunk (k mod PV) div P of
//   micro-batch (k div PV) P + k mod P, the k-th backward the same with the
//   chunk reversed. Needs M a multiple of P. Bubble (P-1)/(VM+P-1).
// - ZB-H1 (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", Section 2.1,
//   Figure 3; torch.distributed.pipelining's ScheduleInterleavedZeroBubble
//   with one stage per rank): 1F1B's warm-up and steady state, W(j) right
//   after B(j + r) on rank r, the last r W's at the end. Bubble
//   (P-1)(T_F + T_B - T_W), a third of 1F1B's when T_F = T_B = T_W; P
//   micro-batches in flight, as 1F1B.
// - ZB-H2 (ibid., Section 2.2): 2(P-1-r)+1 warm-up forwards, W(j) right
//   after B(j + 2r): rank 0 idles max(0, (P-1)(T_F + T_B - 2 T_W)) inside the
//   step (none when T_F = T_B = T_W), at 2P-1 micro-batches in flight. The
//   paper describes its order in words (Figure 3, bottom); this one is weft's
//   reading of it.
// - ZB-V (Qi et al., "Pipeline Parallelism with Controllable Memory", 2024;
//   torch's ScheduleZBVZeroBubble): two chunks per rank in a V, rank r
//   holds stages r and 2P-1-r; no bubble when T_F = T_B = T_W at 1F1B's
//   activation memory.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_TASKORDER_H
#define WEFT_ANALYSIS_TASKORDER_H

#include "weft/Analysis/Schedule.h"
#include "weft/Dialect/Weft/IR/Task.h"

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

/// One task of a rank's order: F, B or W (W only in split schedules, where
/// B is the input gradient alone) of chunk `chunk` for `microBatch`.
struct OrderedTask {
  TaskKind kind = TaskKind::Forward;
  int64_t chunk = 0;
  int64_t microBatch = 0;
  /// "F0.3": kind, chunk, micro-batch.
  std::string label() const;
  bool operator==(const OrderedTask &o) const {
    return kind == o.kind && chunk == o.chunk && microBatch == o.microBatch;
  }
};

/// The model chunks each rank holds under `kind`: `virtualStages` for
/// interleaved, 2 for ZB-V, else 1.
int64_t chunksPerRank(ScheduleKind kind, int64_t virtualStages);

/// Whether `kind` splits each backward into B and W.
bool splitsWeightGradient(ScheduleKind kind);

/// The pipeline stage (0-based, of ranks * chunksPerRank) that chunk
/// `chunk` of rank `rank` runs.
int64_t chunkStage(ScheduleKind kind, int64_t ranks, int64_t rank,
                   int64_t chunk);

/// Each rank's tasks in order: M forwards and M backwards (and M W's for
/// split schedules) per chunk. Empty, with the reason in `*error`, for a
/// layout the schedule cannot run (interleaved: M not a multiple of P, or
/// fewer than 2 chunks; any: no ranks or micro-batches).
std::vector<std::vector<OrderedTask>>
rankTaskOrders(ScheduleKind kind, int64_t ranks, int64_t microBatches,
               int64_t virtualStages, std::string *error);

/// Per-task times of one chunk (seconds, any unit): forward, backward (the
/// input gradient; with W for a schedule that does not split), weight
/// gradient, and a transfer between ranks.
struct TaskTimes {
  double forward = 1, backward = 1, weight = 1, transfer = 0;
  /// Stage s's forward, backward and weight-gradient times are the above
  /// times stageScale[s] (uneven stages: a pipeline's end stages hold a
  /// model's embedding and head); empty: all stages alike.
  std::vector<double> stageScale;
};

/// Each of `ranks` ranks' work under `stageScale` (TaskTimes', of
/// ranks * chunksPerRank(kind, virtualStages) stages), as a multiple of an
/// even stage's: the mean scale of its chunks' stages; all 1 when the
/// scales are empty.
std::vector<double> rankLoads(ScheduleKind kind, int64_t ranks,
                              int64_t virtualStages,
                              const std::vector<double> &stageScale);

/// T_F = T_B = T_W = 1 for a whole stage's layers, a chunk taking its share
/// (1 / chunksPerRank), and free transfers: the papers' uniform case.
TaskTimes uniformStageTimes(ScheduleKind kind, int64_t virtualStages);

/// The bubble fraction of `kind` on `ranks` uniform stages (uniformStage-
/// Times) for `microBatches`: (P-1)/(M+P-1) for GPipe and 1F1B, the
/// zero-bubble papers' figures for the others; NaN for a layout the
/// schedule cannot run.
double uniformBubbleFraction(ScheduleKind kind, int64_t ranks,
                             int64_t microBatches, int64_t virtualStages = 2);

struct TaskOrderSimulation {
  /// The step: first task's start to last task's end.
  double makespan = 0;
  /// Per rank: time busy, and idle time between its first and last task.
  std::vector<double> busy, innerIdle;
  /// Per rank: the most chunk activations held at once (a chunk's
  /// micro-batch from its F's start to the end of its W, or of its B when
  /// the schedule does not split).
  std::vector<int64_t> peakActivations;
  /// 1 - (sum of busy) / (ranks * makespan).
  double bubbleFraction() const;
};

/// Runs `orders` (rankTaskOrders') on one simulated device per rank: a
/// task starts when its rank is free and its inputs are ready (F after the
/// previous stage's F of its micro-batch, B after its F and the next
/// stage's B, W after its B; `transfer` added between ranks). Empty, with
/// each stuck rank's next task in `*error`, when the orders deadlock, and
/// when they are not `ranks` orders of F, B and W tasks of stages that
/// every rank's chunks cover.
std::optional<TaskOrderSimulation>
simulateTaskOrders(ScheduleKind kind, int64_t ranks,
                   const std::vector<std::vector<OrderedTask>> &orders,
                   const TaskTimes &times, std::string *error);

} // namespace weft

#endif // WEFT_ANALYSIS_TASKORDER_H
