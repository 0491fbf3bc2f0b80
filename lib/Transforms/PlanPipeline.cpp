//===- PlanPipeline.cpp - weft-plan-pipeline ------------------------------===//

#include "weft/Transforms/Pipelines.h"

#include "weft/Analysis/DeviceModelFile.h"
#include "weft/Analysis/PipelineSimulation.h"
#include "weft/Analysis/TaskOrder.h"
#include "weft/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace weft {

namespace {
/// One name per enum value: what weftc's flags, the pipeline's options
/// and the passes' string options call it.
template <typename E> struct Named {
  E value;
  llvm::StringLiteral name;
};
constexpr Named<CompiledStep> kSteps[] = {
    {CompiledStep::Forward, "forward"},
    {CompiledStep::Gradients, "gradients"},
    {CompiledStep::Train, "train"}};
constexpr Named<RecomputePolicy> kPolicies[] = {
    {RecomputePolicy::None, "none"},
    {RecomputePolicy::Full, "full"},
    {RecomputePolicy::Selective, "selective"}};
constexpr Named<RecomputeGranularity> kGranularities[] = {
    {RecomputeGranularity::Stage, "stage"},
    {RecomputeGranularity::Layer, "layer"}};
constexpr Named<TensorParallelFallback> kFallbacks[] = {
    {TensorParallelFallback::Error, "error"},
    {TensorParallelFallback::Replicate, "replicate"}};
constexpr Named<OptimizerKind> kOptimizers[] = {{OptimizerKind::AdamW, "adamw"},
                                                {OptimizerKind::SGD, "sgd"}};

template <typename E, size_t N>
std::optional<E> lookup(const Named<E> (&table)[N], llvm::StringRef name) {
  for (const Named<E> &entry : table)
    if (entry.name == name)
      return entry.value;
  return std::nullopt;
}

template <typename E, size_t N>
llvm::StringRef nameOf(const Named<E> (&table)[N], E value) {
  for (const Named<E> &entry : table)
    if (entry.value == value)
      return entry.name;
  llvm_unreachable("every enum value is named");
}

/// The AdamW betas, defaulting to torch's (0.9, 0.999).
std::pair<double, double> betasOf(const PlanPipelineOptions &o) {
  if (o.betas.size() == 2)
    return {o.betas[0], o.betas[1]};
  return {0.9, 0.999};
}
} // namespace

std::optional<RecomputePolicy> parseRecomputePolicy(llvm::StringRef name) {
  return lookup(kPolicies, name);
}

std::optional<RecomputeGranularity>
parseRecomputeGranularity(llvm::StringRef name) {
  return lookup(kGranularities, name);
}

std::optional<OptimizerKind> parseOptimizer(llvm::StringRef name) {
  return lookup(kOptimizers, name);
}

std::optional<TensorParallelFallback>
parseTensorParallelFallback(llvm::StringRef name) {
  return lookup(kFallbacks, name);
}

LogicalResult PlanPipelineOptions::validate(
    llvm::function_ref<void(const llvm::Twine &)> error) const {
  auto fail = [&](const llvm::Twine &message) {
    error(message);
    return failure();
  };
  if (pipelineParallel < 1)
    return fail("--pipeline-parallel must be at least 1");
  if (microbatches < 1)
    return fail("--microbatches must be at least 1");
  if (tensorParallel < 1)
    return fail("--tensor-parallel must be at least 1");
  if (dataParallel < 1)
    return fail("--data-parallel must be at least 1");
  if (!std::isfinite(bucketCapMb) || bucketCapMb < 0)
    return fail("--bucket-cap-mb must be a finite number >= 0");
  if (dataParallel > 1 && step == CompiledStep::Forward)
    return fail("--data-parallel needs a training step");
  if (zeroStage < 0 || zeroStage > 3)
    return fail("--zero-stage " + llvm::Twine(zeroStage) +
                ": expected 0, 1, 2 or 3");
  if (!std::isfinite(optimizerShardThresholdKb) ||
      optimizerShardThresholdKb < 0)
    return fail("--optimizer-shard-threshold must be a finite number >= 0");
  if (optimizerShardSize != 0 &&
      (zeroStage == 0 || optimizerShardSize < 2 ||
       optimizerShardSize > dataParallel || dataParallel % optimizerShardSize))
    return fail("--optimizer-shard-size " + llvm::Twine(optimizerShardSize) +
                ": expected 0 or a group of 2 or more replicas that divides "
                "--data-parallel (" +
                llvm::Twine(dataParallel) + "), with --zero-stage");
  if (zeroPrefetch && zeroStage != 1 && zeroStage != 2)
    return fail("--zero-prefetch needs --zero-stage 1 or 2 (stage 3 "
                "gathers each parameter at its uses)");
  if (zeroStage > 0 && dataParallel < 2)
    return fail("--zero-stage shards over the data axis: it needs "
                "--data-parallel of 2 or more");
  if (precision != "f32" && precision != "bf16" && precision != "f16")
    return fail("--precision " + precision + ": expected bf16, f16 or f32");
  // f16 trains with dynamic loss scaling (GradScaler): a gradient step
  // alone would return scaled gradients.
  if (fp32ResidualConnection && precision == "f32")
    return fail("--fp32-residual-connection keeps the residual stream f32 "
                "under --precision bf16 or f16; this step is f32");
  if (precision == "f16" && step == CompiledStep::Gradients)
    return fail("--precision f16 --gradients: the gradients of an f16 step "
                "are loss-scaled; compute them in bf16 or f32");
  if (sequenceParallel && tensorParallel < 2)
    return fail("--sequence-parallel needs --tensor-parallel of 2 or more");
  if (!balance.empty() && pipelineParallel < 2)
    return fail("--balance needs --pipeline-parallel of 2 or more");
  if (pipelineParallel > 1 && step == CompiledStep::Forward)
    return fail("--pipeline-parallel needs a training step (or --gradients)");
  if (schedule == ScheduleKind::Interleaved && virtualStages < 2)
    return fail("--virtual-stages " + llvm::Twine(virtualStages) +
                ": the interleaved schedule runs 2 or more model chunks per "
                "rank");
  if (!deviceModel.empty())
    if (llvm::Expected<DeviceModel> device = loadDeviceModel(deviceModel);
        !device)
      return fail("--device-model: " + llvm::toString(device.takeError()));
  if (pipelineParallel > 1) {
    std::string why;
    if (rankTaskOrders(schedule, pipelineParallel, microbatches, virtualStages,
                       &why)
            .empty())
      return fail("--schedule " + scheduleName(schedule) + ": " + why);
  }
  if (step != CompiledStep::Train)
    return success();
  // torch.optim's ranges: a value outside them, or not finite, is an error
  // naming the flag, never a silent default.
  auto bad = [&](llvm::StringRef flag, double value, llvm::StringRef range) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", value);
    return fail("--" + flag + "=" + text + ": must be " + range);
  };
  if (!std::isfinite(lr) || lr <= 0)
    return bad("lr", lr, "a finite number > 0");
  if (!std::isfinite(clipGradNorm) || clipGradNorm < 0)
    return bad("clip-grad-norm", clipGradNorm, "a finite number >= 0");
  // GradScaler's gradients are scaled until the update, which unscales
  // them inside: their norm is the scale's times theirs (torch clips after
  // scaler.unscale_, a separate step weft's loss scaling does not have).
  if (clipGradNorm > 0 && precision == "f16")
    return fail("--clip-grad-norm with --precision f16: the gradients are "
                "loss-scaled until the update, so their norm is not the "
                "model's; clip under bf16 or f32");
  // -1, the default, means "torch's default for the optimizer".
  if (weightDecay != -1.0 && (!std::isfinite(weightDecay) || weightDecay < 0))
    return bad("weight-decay", weightDecay, "a finite number >= 0");
  if (!std::isfinite(momentum) || momentum < 0)
    return bad("momentum", momentum, "a finite number >= 0");
  if (!std::isfinite(eps) || eps < 0)
    return bad("eps", eps, "a finite number >= 0");
  if (!betas.empty() && betas.size() != 2)
    return fail("--betas: expected B1,B2");
  auto [beta1, beta2] = betasOf(*this);
  for (double beta : {beta1, beta2})
    if (!(beta >= 0 && beta < 1))
      return bad("betas", beta, "in [0, 1)");
  return success();
}

std::string PlanPipelineOptions::textual() const {
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", v);
    return std::string(text);
  };
  auto [beta1, beta2] = betasOf(*this);
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "step=" << nameOf(kSteps, step.getValue())
     << " pipeline-parallel=" << pipelineParallel;
  if (!balance.empty()) {
    os << " balance=";
    llvm::interleave(balance, os, ",");
  }
  os << " data-parallel=" << dataParallel
     << " bucket-cap-mb=" << number(bucketCapMb) << " zero-stage=" << zeroStage
     << " optimizer-shard-threshold=" << number(optimizerShardThresholdKb)
     << " optimizer-shard-size=" << optimizerShardSize
     << " zero-prefetch=" << (zeroPrefetch ? "true" : "false");
  os << " tensor-parallel=" << tensorParallel << " tensor-parallel-fallback="
     << nameOf(kFallbacks, tensorParallelFallback.getValue())
     << " sequence-parallel=" << (sequenceParallel ? "true" : "false")
     << " overlap-collectives=" << (overlapCollectives ? "true" : "false");
  os << " precision=" << precision << " fp32-residual-connection="
     << (fp32ResidualConnection ? "true" : "false")
     << " flash-attention=" << (flashAttention ? "true" : "false")
     << " microbatches=" << microbatches
     << " schedule=" << scheduleName(schedule)
     << " virtual-stages=" << virtualStages;
  if (!deviceModel.empty())
    os << " device-model=" << deviceModel;
  os << " optimizer=" << nameOf(kOptimizers, optimizer.getValue())
     << " lr=" << number(lr) << " weight-decay=" << number(weightDecay)
     << " momentum=" << number(momentum)
     << " nesterov=" << (nesterov ? "true" : "false")
     << " betas=" << number(beta1) << "," << number(beta2)
     << " eps=" << number(eps) << " clip-grad-norm=" << number(clipGradNorm)
     << " recompute=" << nameOf(kPolicies, recompute.getValue())
     << " recompute-granularity="
     << nameOf(kGranularities, recomputeGranularity.getValue());
  return out;
}

void buildPlanPipeline(OpPassManager &pm, const PlanPipelineOptions &o) {
  // The devices: P stages x D replicas x T tensor-parallel ranks; plan
  // emission takes coordinates from it.
  pm.addPass(createCreateDeviceMesh({o.pipelineParallel, o.dataParallel,
                                     o.tensorParallel, o.optimizerShardSize}));
  // One kernel per GELU, which keeps only its input for the backward.
  pm.addNestedPass<func::FuncOp>(createFuseGelu());
  // One kernel per gated MLP activation (SwiGLU, GeGLU), which keeps the
  // gate and up projections alone.
  pm.addNestedPass<func::FuncOp>(createFuseGlu());
  // One kernel per RMSNorm, which keeps its input and one f32 per row.
  pm.addNestedPass<func::FuncOp>(createFuseRmsNorm());
  // One kernel per rotary embedding, forward and backward.
  pm.addNestedPass<func::FuncOp>(createFuseRotary());
  // One kernel per core attention, which keeps no [s, s] activations.
  if (o.flashAttention)
    pm.addNestedPass<func::FuncOp>(createFuseAttention());
  // Megatron's blocks sharded over the tensor axis, on the forward graph:
  // autodiff then derives the backward's collectives from f and g.
  if (o.tensorParallel > 1)
    pm.addNestedPass<func::FuncOp>(createSplitTensorParallel(
        {nameOf(kFallbacks, o.tensorParallelFallback.getValue()).str()}));
  // The region between g and f on 1/T of the sequence.
  if (o.sequenceParallel)
    pm.addNestedPass<func::FuncOp>(createSplitSequenceParallel());
  // Linear layers' x @ W^T as gemms reading W (no weight copy per step),
  // their biases added in the gemm (cuBLASLt's epilogue); after the tensor-
  // and sequence-parallel splits, which match Linear layers in the matmul
  // form, so on each rank's shard of W.
  pm.addNestedPass<func::FuncOp>(createFoldWeightTranspose());
  pm.addNestedPass<func::FuncOp>(createFoldLinearBias());
  // Fused attention on the projections' [B, S, H, D] (no head transposes),
  // once each rank's heads are local.
  if (o.flashAttention)
    pm.addNestedPass<func::FuncOp>(createFoldAttentionTranspose());
  // 16-bit operands where autocast's lists say, on the forward graph:
  // autodiff derives a backward of the same precision.
  // f16 training is loss-scaled (GradScaler): bf16 has f32's exponents.
  bool lossScaling = o.precision == "f16" && o.step == CompiledStep::Train;
  if (o.precision != "f32")
    pm.addNestedPass<func::FuncOp>(createMixedPrecision(
        {o.precision, lossScaling, o.fp32ResidualConnection}));
  // Fused attention on the QKV projection's packed output (no split, no
  // concat), after mixed precision has cast its operands.
  if (o.flashAttention)
    pm.addNestedPass<func::FuncOp>(createFoldAttentionSplit());
  if (o.step == CompiledStep::Forward) {
    // A residual add and the LayerNorm of its sum in one kernel; a tanh
    // GELU in its GEMM's epilogue; attention's scale, mask and softmax in
    // one kernel.
    pm.addNestedPass<func::FuncOp>(createFoldResidualLayerNorm());
    pm.addNestedPass<func::FuncOp>(createFoldGemmGelu());
    pm.addNestedPass<func::FuncOp>(createFuseScaleMaskSoftmax());
    if (o.overlapCollectives)
      pm.addNestedPass<func::FuncOp>(createOverlapCollectives());
    return;
  }
  bool pipelined = o.pipelineParallel > 1;
  // Stages are chosen on the forward graph; backward ops inherit their
  // forward op's stage.
  // With model chunks (interleaved, ZB-V), V P stages placed on P ranks.
  if (pipelined) {
    int64_t chunks = chunksPerRank(o.schedule, o.virtualStages);
    pm.addNestedPass<func::FuncOp>(createPartitionPipeline(
        {o.pipelineParallel * chunks,
         llvm::SmallVector<int64_t>(o.balance.begin(), o.balance.end()),
         o.pipelineParallel, o.schedule == ScheduleKind::ZBV ? "v" : "loop",
         o.deviceModel}));
  }
  // The loss keeps its log-sum-exp, not its log-probabilities, for the
  // backward.
  pm.addNestedPass<func::FuncOp>(createFoldLossLogProb());
  // The backward pass: loss -> parameter gradients.
  // Seeded with each micro-batch's and replica's share of the loss, so
  // accumulation and data parallelism only sum.
  // Options by name: a positional list would shift with a new option.
  AutodiffOptions autodiff;
  autodiff.microbatches = o.microbatches;
  autodiff.replicas = o.dataParallel;
  // Zero-bubble schedules run W later (weft-schedule), so need it apart.
  autodiff.splitWeightGradients =
      o.splitWeightGradients || (pipelined && splitsWeightGradient(o.schedule));
  pm.addNestedPass<func::FuncOp>(createAutodiff(autodiff));
  // A LayerNorm's input gradient summed with its residual one in its
  // gradient kernel.
  pm.addNestedPass<func::FuncOp>(createFoldLayerNormGradAdd());
  // A Linear layer's bias gradient summed in its weight gradient's GEMM.
  pm.addNestedPass<func::FuncOp>(createFoldBiasGrad());
  // GPipe micro-batches: M copies of forward+backward, gradients summed.
  pm.addNestedPass<func::FuncOp>(
      createAccumulateMicrobatches({o.microbatches}));
  if (o.step == CompiledStep::Train) {
    // The update: SGD or AdamW, in place, with explicit optimizer state.
    AppendOptimizerOptions update;
    update.optimizer = nameOf(kOptimizers, o.optimizer.getValue()).str();
    update.lr = o.lr;
    update.weightDecay = o.weightDecay;
    update.momentum = o.momentum;
    update.nesterov = o.nesterov;
    std::tie(update.beta1, update.beta2) = betasOf(o);
    update.eps = o.eps;
    pm.addNestedPass<func::FuncOp>(createAppendOptimizer(update));
  }
  // Transfers between stages, then recompute regions (GPipe keeps the last
  // stage's activations: its backward follows at once).
  if (pipelined)
    pm.addNestedPass<func::FuncOp>(createInsertSendRecv());
  // Gradients averaged over the replicas in DDP's buckets, each posted as
  // soon as its last gradient exists.
  if (o.dataParallel > 1)
    pm.addNestedPass<func::FuncOp>(
        createDataParallel({o.bucketCapMb, o.zeroStage,
                            o.optimizerShardThresholdKb, o.zeroPrefetch}));
  // With one replica, each micro-batch's gradient is added to its running
  // sum as soon as it exists (weft-data-parallel does so first).
  else if (o.step == CompiledStep::Train && o.microbatches > 1)
    pm.addNestedPass<func::FuncOp>(createHoistAccumulation());
  // GradScaler: the overflow check of what the updates read, agreed over
  // the mesh, the skip and the scale's update, on every stage.
  if (lossScaling)
    pm.addNestedPass<func::FuncOp>(createLossScaling());
  // clip_grad_norm_ over the whole mesh, on the gradients the updates read.
  if (o.step == CompiledStep::Train && o.clipGradNorm > 0)
    pm.addNestedPass<func::FuncOp>(createClipGradNorm({o.clipGradNorm}));
  pm.addNestedPass<func::FuncOp>(createCheckpoint(
      {nameOf(kPolicies, o.recompute.getValue()).str(),
       /*exceptLast=*/pipelined && o.schedule == ScheduleKind::GPipe,
       nameOf(kGranularities, o.recomputeGranularity.getValue()).str()}));
  // A residual add and the LayerNorm of its sum in one kernel, once the
  // recompute regions are cut at the sums; a tanh GELU and its gradient in
  // their GEMMs' epilogues; attention's scale, mask and softmax in one
  // kernel each way; a loss's gradient computed by its forward kernel,
  // over the scores.
  pm.addNestedPass<func::FuncOp>(createFoldResidualLayerNorm());
  pm.addNestedPass<func::FuncOp>(createFoldGemmGelu());
  pm.addNestedPass<func::FuncOp>(createFuseScaleMaskSoftmax());
  pm.addNestedPass<func::FuncOp>(createFoldLossGrad());
  // Sequence parallelism keeps linears' inputs as shards: gathered again
  // in the backward.
  if (o.sequenceParallel)
    pm.addNestedPass<func::FuncOp>(createRegatherSequenceParallel());
  // The per-stage task order; collectives posted early and waited for late
  // within it; the deadlock check that predicts the timeline.
  if (pipelined)
    pm.addPass(createSchedule({scheduleName(o.schedule).str()}));
  // Each micro-batch's weight gradients summed in their GEMMs, in the
  // order the schedule runs the micro-batches' backwards.
  pm.addNestedPass<func::FuncOp>(createFoldGradAccumulation());
  // An embedding's gradient scattered into its other gradient (a tied
  // head's; another micro-batch's), in place.
  pm.addNestedPass<func::FuncOp>(createFoldGatherGradAdd());
  if (o.overlapCollectives)
    pm.addNestedPass<func::FuncOp>(createOverlapCollectives());
  if (pipelined)
    pm.addPass(o.prediction
                   ? createSimulatePipeline(o.prediction, o.deviceModel)
                   : createSimulatePipeline({false, o.deviceModel}));
}

void registerPlanPipeline() {
  registerPassPipeline(
      "weft-plan-pipeline",
      "Compile an imported model into the step a plan executes (weftc's "
      "passes, options named as weftc's flags)",
      [](OpPassManager &pm, llvm::StringRef text,
         llvm::function_ref<LogicalResult(const llvm::Twine &)> error) {
        PlanPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        bool ok = succeeded(options.validate([&](const llvm::Twine &message) {
          (void)error("weft-plan-pipeline: " + message);
        }));
        if (!ok)
          return failure();
        buildPlanPipeline(pm, options);
        return success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)> handler) {
        handler(PlanPipelineOptions());
      });
}

} // namespace weft
