//===- Pipelines.h - weft's registered pass pipelines -----------*- C++ -*-===//
//
// `weft-plan-pipeline` compiles an imported model into the step a plan
// executes: GELU fusion, then for a training step the pipeline partition,
// the backward pass, micro-batch accumulation, the optimizer update,
// send/recv between stages, recompute regions, the stage schedule and its
// simulation. weftc builds exactly this pipeline from its flags, so
//
//   weftc MODEL --emit=import | weft-opt --weft-plan-pipeline='...'
//
// reproduces any weftc compile; `weftc --print-pipeline` prints the option
// string. Every option is checked in one place, PlanPipelineOptions::
// validate, whose messages name the option as weftc's flag of the same name.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TRANSFORMS_PIPELINES_H
#define WEFT_TRANSFORMS_PIPELINES_H

#include "weft/Analysis/GradientBuckets.h"
#include "weft/Analysis/Schedule.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

#include "weft/Analysis/TensorParallel.h"

namespace weft {

struct SimResult;

/// What the compiled step computes.
enum class CompiledStep {
  Forward,   ///< the model's outputs
  Gradients, ///< the loss and every parameter's gradient (no update)
  Train,     ///< forward, backward and the optimizer update
};

enum class OptimizerKind { AdamW, SGD };

/// Activation recompute (Korthikanti et al. 2022): none, full per region,
/// or Megatron's selective recompute of core attention.
enum class RecomputePolicy { None, Full, Selective };
enum class RecomputeGranularity { Stage, Layer };

/// The names weftc's flags and the pipeline's options share.
std::optional<RecomputePolicy> parseRecomputePolicy(llvm::StringRef name);
std::optional<RecomputeGranularity>
parseRecomputeGranularity(llvm::StringRef name);
std::optional<OptimizerKind> parseOptimizer(llvm::StringRef name);
std::optional<TensorParallelFallback>
parseTensorParallelFallback(llvm::StringRef name);

struct PlanPipelineOptions
    : public mlir::PassPipelineOptions<PlanPipelineOptions> {
  Option<CompiledStep> step{
      *this, "step", llvm::cl::desc("What the step computes"),
      llvm::cl::init(CompiledStep::Train),
      llvm::cl::values(
          clEnumValN(CompiledStep::Forward, "forward", "the forward pass"),
          clEnumValN(CompiledStep::Gradients, "gradients",
                     "the loss and the parameter gradients"),
          clEnumValN(CompiledStep::Train, "train",
                     "forward, backward and the optimizer update"))};
  Option<int64_t> pipelineParallel{
      *this, "pipeline-parallel",
      llvm::cl::desc("Pipeline stages, one rank each"), llvm::cl::init(1)};
  ListOption<int64_t> balance{
      *this, "balance",
      llvm::cl::desc("Ops per stage (default: the cost-balanced partition)")};
  Option<int64_t> tensorParallel{
      *this, "tensor-parallel",
      llvm::cl::desc("Tensor-parallel ranks per stage (Megatron)"),
      llvm::cl::init(1)};
  Option<TensorParallelFallback> tensorParallelFallback{
      *this, "tensor-parallel-fallback",
      llvm::cl::desc("A block the tensor-parallel split cannot handle"),
      llvm::cl::init(TensorParallelFallback::Error),
      llvm::cl::values(
          clEnumValN(TensorParallelFallback::Error, "error", "is an error"),
          clEnumValN(TensorParallelFallback::Replicate, "replicate",
                     "is replicated, with a warning"))};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Megatron sequence parallelism on the tensor axis "
                     "(LayerNorm, dropout, residual on 1/T of the sequence)"),
      llvm::cl::init(false)};
  Option<int64_t> dataParallel{
      *this, "data-parallel",
      llvm::cl::desc("Data-parallel replicas, each on a contiguous 1/D of "
                     "the batch; gradients averaged (DDP)"),
      llvm::cl::init(1)};
  Option<double> bucketCapMb{
      *this, "bucket-cap-mb",
      llvm::cl::desc("Data-parallel gradient bucket size limit, MiB (DDP's "
                     "bucket_cap_mb)"),
      llvm::cl::init(kBucketCapMb)};
  Option<int64_t> zeroStage{
      *this, "zero-stage",
      llvm::cl::desc("Sharded over the data axis (ZeRO): 0 off, 1 optimizer "
                     "state, 2 and gradients, 3 and parameters"),
      llvm::cl::init(0)};
  Option<double> optimizerShardThresholdKb{
      *this, "optimizer-shard-threshold",
      llvm::cl::desc("With --zero-stage: parameters under this many KiB stay "
                     "replicated (MindSpore's threshold)"),
      llvm::cl::init(kShardThresholdKb)};
  Option<int64_t> optimizerShardSize{
      *this, "optimizer-shard-size",
      llvm::cl::desc("With --zero-stage: shard over groups of this many "
                     "replicas (divides --data-parallel; 0: all of them), "
                     "the groups' pieces all-reduced (MindSpore's "
                     "shard_size)"),
      llvm::cl::init(0)};
  Option<bool> zeroPrefetch{
      *this, "zero-prefetch",
      llvm::cl::desc("With --zero-stage 1 or 2: parameters stay pieces "
                     "between steps, gathered at the next step's start "
                     "(MindSpore's level1/level2)"),
      llvm::cl::init(false)};
  Option<bool> overlapCollectives{
      *this, "overlap-collectives",
      llvm::cl::desc("Post each collective early and wait for it late "
                     "(weft-overlap-collectives); false: each completes "
                     "before the next op"),
      llvm::cl::init(true)};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("bf16 or f16: matmuls, convolutions and activations "
                     "16-bit, f32 master weights and optimizer state "
                     "(weft-mixed-precision); f32: as the model is typed"),
      llvm::cl::init("f32")};
  Option<bool> fp32ResidualConnection{
      *this, "fp32-residual-connection",
      llvm::cl::desc("With --precision bf16|f16: embedding lookups, and so "
                     "the residual stream, in f32 (Megatron-LM's flag)"),
      llvm::cl::init(false)};
  Option<bool> flashAttention{
      *this, "flash-attention",
      llvm::cl::desc("Each core attention as one weft.attention "
                     "(weft-fuse-attention): no [s, s] activations kept"),
      llvm::cl::init(false)};
  Option<bool> splitWeightGradients{
      *this, "split-weight-gradients",
      llvm::cl::desc("Split the backward into B and W (weft-autodiff); "
                     "gpipe and 1f1b run each W in its B's task; the "
                     "zero-bubble schedules split whether or not it is set"),
      llvm::cl::init(false)};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Micro-batches per step (the model is imported at "
                     "micro-batch size)"),
      llvm::cl::init(1)};
  Option<ScheduleKind> schedule{
      *this, "schedule", llvm::cl::desc("Pipeline schedule"),
      llvm::cl::init(ScheduleKind::OneFOneB),
      llvm::cl::values(clEnumValN(ScheduleKind::GPipe, "gpipe", "GPipe"),
                       clEnumValN(ScheduleKind::OneFOneB, "1f1b",
                                  "one forward, one backward"),
                       clEnumValN(ScheduleKind::ZBH1, "zb-h1",
                                  "zero bubble, 1F1B's memory (W later)"),
                       clEnumValN(ScheduleKind::ZBH2, "zb-h2",
                                  "zero bubble, twice 1F1B's memory"),
                       clEnumValN(ScheduleKind::Interleaved, "interleaved",
                                  "interleaved 1F1B (model chunks)"),
                       clEnumValN(ScheduleKind::ZBV, "zb-v",
                                  "zero bubble, two chunks per rank in a V"))};
  Option<std::string> deviceModel{
      *this, "device-model",
      llvm::cl::desc("Device model that times ops for the partitioner and "
                     "the predicted step: a name in bench/devices or a JSON "
                     "file (default: the CPU default of CostModel.h)"),
      llvm::cl::init("")};
  Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Model chunks per pipeline rank under the interleaved "
                     "schedule (Megatron-LM's virtual pipeline size; ZB-V "
                     "runs 2, the others 1)"),
      llvm::cl::init(2)};
  Option<OptimizerKind> optimizer{
      *this, "optimizer", llvm::cl::desc("Optimizer of a training step"),
      llvm::cl::init(OptimizerKind::AdamW),
      llvm::cl::values(
          clEnumValN(OptimizerKind::AdamW, "adamw", "torch.optim.AdamW"),
          clEnumValN(OptimizerKind::SGD, "sgd", "torch.optim.SGD"))};
  Option<double> lr{*this, "lr", llvm::cl::desc("Learning rate"),
                    llvm::cl::init(1e-3)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay (-1: torch's default, AdamW 0.01, SGD 0)"),
      llvm::cl::init(-1.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::desc("SGD momentum"),
                          llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov",
                        llvm::cl::desc("SGD Nesterov momentum"),
                        llvm::cl::init(false)};
  ListOption<double> betas{*this, "betas",
                           llvm::cl::desc("AdamW betas B1,B2 (0.9,0.999)")};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW epsilon"),
                     llvm::cl::init(1e-8)};
  Option<double> clipGradNorm{
      *this, "clip-grad-norm",
      llvm::cl::desc("Scale the gradients to a global 2-norm of at most "
                     "this before the update (torch's clip_grad_norm_; 0: "
                     "off)"),
      llvm::cl::init(0.0)};
  Option<RecomputePolicy> recompute{
      *this, "recompute", llvm::cl::desc("Activation recompute"),
      llvm::cl::init(RecomputePolicy::None),
      llvm::cl::values(
          clEnumValN(RecomputePolicy::None, "none", "keep activations"),
          clEnumValN(RecomputePolicy::Full, "full",
                     "recompute each region's forward"),
          clEnumValN(RecomputePolicy::Selective, "selective",
                     "recompute core attention (Megatron-LM)"))};
  Option<RecomputeGranularity> recomputeGranularity{
      *this, "recompute-granularity",
      llvm::cl::desc("Regions of full recompute"),
      llvm::cl::init(RecomputeGranularity::Stage),
      llvm::cl::values(
          clEnumValN(RecomputeGranularity::Stage, "stage", "a stage"),
          clEnumValN(RecomputeGranularity::Layer, "layer",
                     "a transformer layer or residual block"))};

  /// Checks the values and their combinations: counts at least 1, --balance
  /// only with stages, a pipeline only for a gradient step, the optimizer
  /// values within torch.optim's ranges (finite; lr > 0; weight decay,
  /// momentum and eps >= 0; betas two values in [0, 1)). Calls `error` with
  /// a message naming the option as a flag ("--lr=0: must be a finite number
  /// > 0") and returns failure on the first problem.
  llvm::LogicalResult
  validate(llvm::function_ref<void(const llvm::Twine &)> error) const;

  /// The options as weft-plan-pipeline parses them ("step=train
  /// pipeline-parallel=2 ... lr=0.001 ..."), every value exact (floats with
  /// 17 significant digits), so the text rebuilds the same pipeline.
  std::string textual() const;

  /// Not an option: where weft-simulate-pipeline leaves its prediction of a
  /// pipelined step (a driver's, null for none), so that the driver's
  /// report does not simulate the step again.
  std::optional<SimResult> *prediction = nullptr;
};

/// Adds weft-plan-pipeline's passes for `options` (valid: see validate).
void buildPlanPipeline(mlir::OpPassManager &pm,
                       const PlanPipelineOptions &options);

/// Registers weft-plan-pipeline (for weft-opt); invalid options are an
/// error naming the option.
void registerPlanPipeline();

} // namespace weft

#endif // WEFT_TRANSFORMS_PIPELINES_H
