//===- LayoutEstimate.h - layouts estimated from one-stage profiles -*- C++
//-*-===//
//
// Compiling every layout of a large model on many devices takes hours (a
// GPT-3 compile takes seconds, and 1024 devices have thousands of
// layouts). The estimate compiles one step per class instead: the layouts
// that share T, sequence parallelism, recompute and flash attention share
// their per-micro-batch work, so one compile at P = D = M = 1 profiles all
// of them. A layout's step is then its schedule's task orders
// (TaskOrder.h: the orders weft-schedule emits) simulated with the
// profile's forward, backward and weight-gradient times split over its
// stages as the partitioner splits the model (below), plus the update
// (over D with ZeRO), weft-data-parallel's bucket copies
// (bucketCopyBytes), the data-parallel collectives' exposed part, and
// ZeRO-3's per-use gathers as the step runs them (exposedGatherSeconds);
// its memory is the
// profile's model states over P (and D, as ZeRO shards them) plus, on the
// rank that holds most, the kept activations of the micro-batches between
// their F and B and, under a zero-bubble schedule, what the W tasks read
// of those between their B and W, at the most of the profile's moments
// (estimatedPeak): the live bytes, not the arena, which packs them with
// some slack.
// A model of many layers is profiled on its first 2 and 3 layers and the
// profile extrapolated (extrapolateProfile; AutoParallel.cpp cuts them).
// Each class is profiled at micro-batch sizes 1 and 2, and a micro-batch of
// b samples takes the line through them (fitPerSample): a fixed part that
// does not grow with b (each GEMM reads its weights once a micro-batch, a
// collective's latency) and b times the rest (GEMMs' FLOPs, activations'
// bytes). Activations' bytes are taken as b times size 1's.
//
// Each pipeline hop sends the layer boundary's activation (RepeatedLayers.h)
// over the slowest link the pipeline spans. Stages take the shares of the
// work that the partitioner gives them (the end stages' embedding and
// head), by its own costs of the model's forward (PartitionCosts.h). What
// it leaves out: those stages' memory (model states and kept activations
// are taken as even), and the overlap of data-parallel collectives beyond
// one micro-batch's backward.
// The search compiles the layouts it picks (AutoParallel.h), so the plan
// it writes is exact; the estimate only orders the candidates.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_LAYOUTESTIMATE_H
#define WEFT_TOOLS_WEFTC_LAYOUTESTIMATE_H

#include "AutoParallel.h"

#include "weft/Analysis/MemoryPlan.h"
#include "weft/Analysis/ModelStates.h"
#include "weft/Analysis/PipelineSimulation.h"
#include "weft/Analysis/TaskOrder.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace weft {

/// One op of a profile's micro-batch, in program order, for ZeRO-3's
/// gathers (exposedGatherSeconds): its seconds at b samples, fixed + b
/// perSample (fitPerSample), and the bytes of each parameter it reads,
/// which ZeRO-3 all-gathers right before it (shardParameter,
/// ShardedBucket.cpp).
struct ProfiledOp {
  double fixed = 0, perSample = 0;
  llvm::SmallVector<int64_t, 2> paramBytes;
};

/// What a compiled one-stage step (P = D = M = 1) says about its class.
/// Seconds are of its one micro-batch: the ops' roofline and collective
/// times by task kind, scaled so that with the update they add up to the
/// simulated step (exposed collectives included).
struct StepProfile {
  double forward = 0, backward = 0, weight = 0, update = 0;
  /// The part of forward, backward and weight that a micro-batch takes
  /// whatever its size, seconds (fitPerSample; 0 in profileStep's).
  double forwardFixed = 0, backwardFixed = 0, weightFixed = 0;
  /// Where the forward, backward and weight-gradient time goes (LayoutScore's
  /// parts, bubble and data aside; the update is memory-bound).
  double compute = 0, memory = 0, tensorComm = 0;
  /// The part of compute and memory that a micro-batch takes whatever its
  /// size, seconds (fitPerSample; 0 in profileStep's).
  double computeFixed = 0, memoryFixed = 0;
  ModelStates states; ///< the rank's parameters, gradients, state
  int64_t kept = 0;   ///< kept activations of the micro-batch, bytes
  /// What its weight-gradient tasks hold from its backward on: the
  /// activations and output gradients the W ops read that an earlier task
  /// wrote and the W ops release, bytes (weightHeldBytes). A zero-bubble
  /// schedule holds these from a micro-batch's B to its W: under sequence
  /// parallelism the gathered inputs and output gradients, more than the
  /// kept activations the B frees.
  int64_t weightHeld = 0;
  /// Under recompute: the kept activations of its class without recompute
  /// (the same T, SP and flash attention), bytes, when the search has that
  /// class (0 otherwise). GPipe does not recompute its last micro-batch
  /// (torchgpipe's checkpoint='except_last'), which keeps these.
  int64_t keptWithoutRecompute = 0;
  /// What a pipeline cut between layers sends a micro-batch, bytes
  /// (layerBoundaryBytes; 0 when no layer repeats).
  int64_t boundary = 0;
  /// Moments of its step, for estimatedPeak, of each compile fitPerSample
  /// joins: where its kept activations peak (its backward's start), the
  /// most live step of the backward after it (a recompute's peak), and the
  /// update's most live step. At each, bytes: the parameter gradients
  /// live (activation gradients aside), the kept activations, and the rest
  /// beside the parameters and optimizer state (temporaries, activation
  /// gradients, recomputed activations, inputs); `samples`, the
  /// micro-batch's.
  struct Moment {
    int64_t samples = 1, gradients = 0, kept = 0, other = 0;
    bool start = false; ///< the backward's start
  };
  std::vector<Moment> moments;
  /// Its forward, backward, weight-gradient and recompute ops (not the
  /// update, views included, collectives not); extrapolated, the ops of
  /// the profile of one layer more are `opsMore`, and a figure over the
  /// ops stands for f(ops) + repeat (f(opsMore) - f(ops)).
  std::vector<ProfiledOp> ops, opsMore;
  int64_t repeat = 0;
  double modelFlops = 0, hardwareFlops = 0; ///< over its T ranks
};

/// The profile of `module`, a compiled one-stage step, from its simulated
/// `step` on `device` and its arena and breakdown.
StepProfile profileStep(mlir::ModuleOp module, const SimResult &step,
                        const DeviceModel &device, const MemoryPlan &plan,
                        const MemoryBreakdown &breakdown);

/// The bytes of `func`'s activation storages (`plan`'s) that its W tasks
/// read, that a task other than a W wrote, and that die by the last W op:
/// what a micro-batch holds from its B to its W (not the parameter
/// gradients, which live on to the update).
int64_t weightHeldBytes(mlir::func::FuncOp func, const MemoryPlan &plan);

/// The profile of a model of `layers` layers from those of its first
/// `fewer` and `fewer` + 1 layers (`a` and `b`): each figure a + (layers -
/// fewer) (b - a). A step's times, FLOPs, model states and kept activations
/// (all of a micro-batch's, at M = 1) grow by one layer's share per layer;
/// so are the moments' bytes (the moments are found by where they lie in
/// the step, the same ones in both).
StepProfile extrapolateProfile(const StepProfile &a, const StepProfile &b,
                               int64_t fewer, int64_t layers);

/// The profile of a micro-batch of one sample, `one`, split by the
/// profile at two samples, `two`: a task kind's seconds at b samples are
/// its fixed part plus b times its per-sample part, the line through the
/// two (fixed = 2 one - two, per sample = two - one), each part at least
/// 0: size 2 taking more than twice size 1's time gives no fixed part (the
/// per-sample part is size 1's), and taking no more than size 1's gives no
/// per-sample part. Its compute and memory seconds split the same way; its
/// moments are both's; the other fields are `one`'s.
StepProfile fitPerSample(const StepProfile &one, const StepProfile &two);

/// The schedules' task orders and simulations, shared by the layouts of a
/// search: layouts that differ in ZeRO stage only run the same pipeline,
/// and a makespan is homogeneous in the task times (scaling F, B and W by
/// c scales every path, so the step, by c), so layouts whose forward,
/// backward, weight-gradient and transfer times are in the same ratios
/// share one simulation too.
class ScheduleCache {
public:
  /// What a rank holds at once under the schedule, counted in chunks (a
  /// chunk is 1 / chunks-per-rank of a stage) along every rank's own task
  /// order: `forward` chunks from an F to their B (kept activations) and
  /// `weight` chunks from a B to their W (what the W reads; none where the
  /// schedule does not split W). The pairs a peak can be at (after an F or
  /// a B), none dominated by another.
  struct Held {
    int64_t forward = 0, weight = 0;
  };
  /// Those pairs, kept by the cache; null, with the reason in `why`, for a
  /// layout the schedule cannot run.
  const std::vector<Held> *inFlight(ScheduleKind kind, int64_t ranks,
                                    int64_t microBatches, int64_t chunks,
                                    std::string &why);
  /// The step of those orders (simulateTaskOrders) with a stage's forward,
  /// backward and weight-gradient seconds of a micro-batch (a chunk takes
  /// its share; stage s's times `stageScale[s]` those, TaskTimes'),
  /// forward > 0, and `transfer` seconds between ranks; infinity for orders
  /// that deadlock.
  double makespan(ScheduleKind kind, int64_t ranks, int64_t microBatches,
                  int64_t chunks, double forward, double backward,
                  double weight, double transfer,
                  const std::vector<double> &stageScale = {});
  /// A bound no schedule beats: each rank runs its M micro-batches' F, B
  /// and W, and the last rank starts after the forwards of the stages
  /// before its first (P - 1) and their transfers, so the step is at least
  /// (P - 1) (F / chunks + transfer) + M (F + B + W) with even stages.
  static double makespanBound(ScheduleKind kind, int64_t ranks,
                              int64_t microBatches, int64_t chunks,
                              double forward, double backward, double weight,
                              double transfer,
                              const std::vector<double> &stageScale = {});

private:
  using Key = std::tuple<int, int64_t, int64_t, int64_t>;
  struct Orders {
    std::vector<Held> frontier;
    std::string why; ///< non-empty: the schedule cannot run the layout
  };
  std::map<Key, Orders> held;
  /// Makespans with forward = 1, by (orders, backward / forward,
  /// weight / forward, transfer / forward, stage scales).
  std::map<std::tuple<Key, double, double, double, std::vector<double>>, double>
      makespans;
};

/// The bytes weft-data-parallel's bucket copies move on a rank a step
/// (read and written; memory-bound, not overlapped), from the stage's
/// `gradients` and `params` bytes (G and W), M `microBatches` and D `replicas`,
/// by what the pass emits (ShardedBucket.cpp; docs/architecture.md, "ZeRO"):
/// - ZeRO-0 (DDP): the gradients packed into buckets and the reduced
///   buckets unpacked, 4 G;
/// - ZeRO-1 and 2: packed 2 G (2 M G at stage 2, each micro-batch's, and
///   their pieces summed, 3 (M - 1) G / D); the reduced shard split into
///   pieces, 2 G / D; the updated pieces packed, 2 W / D; the gathered
///   bucket split, 2 W; and assigned into the parameters, 3 W (each
///   parameter's piece is sliced out by shard.all_slice, timed as a
///   collective);
/// - ZeRO-3: packed and summed as stage 2, the shard split, 2 G / D (the
///   pieces are the parameters, updated in place).
/// The few parameters under the shard threshold, all-reduced as DDP's, are
/// counted as sharded. On the gpt example at D = 2 (weft-test-print-cost's
/// bytes of those ops): 13.87 MB against 13.87 at ZeRO-0, 30.91 against
/// 31.22 at ZeRO-1, and at M = 1, 2, 4 40.40 against 43.36 (M = 2) at
/// ZeRO-2 and 10.47, 20.74, 42.87 against 10.40, 22.54, 46.82 at ZeRO-3.
double bucketCopyBytes(int64_t zeroStage, int64_t gradients, int64_t params,
                       int64_t microBatches, int64_t replicas);

/// The seconds ZeRO-3's parameter gathers add to `profile`'s micro-batch
/// of `samples`: its ops run in order on one stream and each gather on
/// another, posted when the op before its reader starts (weft-overlap-
/// collectives posts each one op early) and taking `gather(bytes)`
/// seconds, the reader waiting for it; parameters under
/// `thresholdBytes` are not gathered. The step's excess over the ops'
/// own time.
double exposedGatherSeconds(const StepProfile &profile, double samples,
                            int64_t thresholdBytes,
                            llvm::function_ref<double(int64_t)> gather);

/// The estimated score of `layout` with `batch` samples a step from its
/// class's `profile` (fitPerSample's): the forward, backward and
/// weight-gradient seconds are their fixed parts plus the micro-batch size
/// b = batch / (D M) times their per-sample parts; kept and other bytes
/// and FLOPs are proportional to b, the update and model states
/// independent of it. A layout whose estimated peak
/// exceeds `capBytes` (> 0) is not timed (its step is infinite); `error`
/// is set for a schedule the layout cannot run. `exact` false: the
/// pipeline's makespan is its bound (makespanBound), not simulated, so the
/// step is a lower bound on the estimate. `stageScale`: each of the
/// layout's P x chunks stages' work as a multiple of an even stage's, as
/// the partitioner cuts the model (TaskTimes::stageScale: stageShares of
/// PartitionCosts.h times the stages); empty: even stages.
/// `shardThresholdBytes`: --optimizer-shard-threshold (ZeRO-3 gathers the
/// parameters at least that large); `bucketCapBytes`: --bucket-cap-mb in
/// bytes (estimatedPeak).
LayoutScore estimateLayout(const Layout &layout, const StepProfile &profile,
                           int64_t batch, const DeviceModel &device,
                           bool sixteenBit, int64_t capBytes,
                           ScheduleCache &cache, bool exact,
                           const std::vector<double> &stageScale,
                           int64_t shardThresholdBytes, int64_t bucketCapBytes);

/// A rank's estimated peak, bytes, by category: the most of its moments
/// (docs/planner.md, "The estimate's memory"), each with the parameters
/// and optimizer state:
/// - the profile's `moments` (StepProfile::Moment, their bytes scaled to
///   the layout's stage and micro-batch): with the kept activations of
///   the micro-batches in flight, `kept`, less what the moment's
///   micro-batch has freed by then (`one`, its kept activations, less the
///   moment's), the moment's other bytes, and the gradients held. With one
///   micro-batch those are the moment's own; with more, the sums of the
///   earlier micro-batches' beside them, whole (ZeRO 0 and 1, which add
///   each micro-batch's into them) or each replica's pieces (ZeRO-2 and 3,
///   which reduce-scatter every micro-batch's). At a backward's start,
///   `startExtra` more kept bytes (GPipe's un-recomputed last micro-batch,
///   whose backward comes first);
/// - with data parallelism, the last backward's end: the whole gradients,
///   a bucket packed from them (weft-data-parallel copies a bucket's
///   gradients into it: up to `bucketCapBytes`, the gradients' bytes at
///   most; 0, a bucket a gradient, is not counted), and under ZeRO-2 and 3
///   with micro-batches the pieces' sums.
/// The states are the rank's (over P, sharded by ZeRO), `gradients` the
/// whole gradients' bytes.
MemoryBreakdown estimatedPeak(int64_t params, int64_t gradients,
                              int64_t optimizer, int64_t kept, int64_t one,
                              int64_t startExtra,
                              llvm::ArrayRef<StepProfile::Moment> moments,
                              int64_t replicas, int64_t microBatches,
                              int64_t zeroStage, int64_t bucketCapBytes);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_LAYOUTESTIMATE_H
