//===- PipelineSimulation.h - predicted timeline of a pipeline --*- C++ -*-===//
//
// Simulates one training step of a pipelined plan on the cost model: each
// rank runs its ops in order on its own clock; compute advances the clock by
// the op's predicted seconds; isend/irecv post a transfer without waiting; a
// wait blocks until the transfer's other side has been posted, and ends at
// max(send post, receive post) + transfer time (alpha-beta model). Sends are
// treated as rendezvous (a wait_send needs the matching receive posted), the
// stricter of MPI's protocols, so a schedule that completes here completes
// under any protocol.
//
// A collective (over the tensor axis: the members are replicas of one
// stage, running one program on equal clocks) is posted without waiting and
// completes its predicted seconds later; its wait blocks until then, so the
// compute between post and wait hides it (weft-overlap-collectives).
//
// A schedule that cannot complete (every unfinished rank blocked on a
// transfer whose other side is never posted) is a deadlock, reported with
// the blocked rank, its op and the transfer it waits on.
//
// The result also gives the predicted step time, each rank's busy time and
// the bubble fraction 1 - mean(busy) / step, which for P uniform stages and M
// micro-batches with free transfers is (P - 1) / (M + P - 1) under GPipe and
// 1F1B (Huang et al. 2019; Narayanan et al. 2021).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_PIPELINESIMULATION_H
#define WEFT_ANALYSIS_PIPELINESIMULATION_H

#include "weft/Analysis/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace weft {

/// One op of a rank's program, as the simulator sees it.
struct SimOp {
  enum class Kind {
    Compute,
    ISend,
    IRecv,
    WaitSend,
    WaitRecv,
    PostCollective,
    WaitCollective
  } kind;
  /// Compute: predicted duration; PostCollective: the collective's.
  double seconds = 0;
  /// Transfers; collectives: tag (their position in the program).
  int64_t peer = 0, tag = 0, bytes = 0;
  /// Task label for the timeline: "F3", "B3", "U" (optimizer update).
  std::string task;
  mlir::Operation *op = nullptr; ///< for diagnostics; may be null
  /// ISend: whether the peer is on another node (the ranks of a pipeline
  /// rank's data and tensor coordinates are consecutive, devicesPerNode a
  /// node; the coordinates (0, 0) stand for all).
  bool crossesNodes = false;
};

/// A slice of the timeline (seconds from the step's start).
struct SimEvent {
  int64_t rank = 0;
  /// Task label, "send F3 -> 2" for transfers, the op for collectives.
  std::string name;
  /// "forward", "backward", "optimizer", "transfer", "collective".
  std::string category;
  double start = 0, end = 0;
};

struct SimResult {
  bool completed = true;
  /// When !completed: the first blocked rank, the index of its op, and a
  /// sentence saying what it waits on.
  int64_t blockedRank = -1, blockedOp = -1;
  std::string deadlock;
  double stepSeconds = 0;
  std::vector<double> busySeconds; ///< per rank: compute time
  double bubbleFraction = 0;       ///< 1 - mean(busy) / step
  std::vector<SimEvent> events;    ///< compute tasks and transfers
};

/// Simulates ranks' programs (index = rank = stage).
SimResult simulatePipeline(const std::vector<std::vector<SimOp>> &ranks,
                           const DeviceModel &device);

/// The functions that become ranks, in rank order: the stage functions of a
/// scheduled module (`weft.stage`, sorted by stage), else @main alone, else
/// none.
llvm::SmallVector<mlir::func::FuncOp> rankFunctions(mlir::ModuleOp module);

/// How many ranks run each of rankFunctions' programs: a pipeline rank's
/// data x tensor ranks (the mesh's size over the programs; 1 without a
/// mesh).
int64_t ranksPerProgram(mlir::ModuleOp module);

/// The programs of a scheduled module's stage functions (`weft-schedule`),
/// ordered by `weft.stage`; empty when the module has none.
std::vector<std::vector<SimOp>> stagePrograms(mlir::ModuleOp module,
                                              const DeviceModel &device);

/// The timeline as a Chrome trace (chrome://tracing, Perfetto): one process
/// per rank, compute on thread 0, transfers on thread 1, collectives on
/// thread 2; microseconds.
std::string chromeTrace(const std::vector<SimEvent> &events);

/// A text Gantt chart, one row per rank, `width` columns for the step, like
/// the figures of the torchgpipe paper.
void printAsciiTimeline(const SimResult &result, int64_t ranks,
                        llvm::raw_ostream &os, int64_t width = 100);

} // namespace weft

#endif // WEFT_ANALYSIS_PIPELINESIMULATION_H
