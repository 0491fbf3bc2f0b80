//===- LayoutFlags.cpp - weftc's layout flags -----------------------------===//

#include "LayoutFlags.h"

using namespace llvm;

cl::OptionCategory &weftc::optionCategory() {
  // Constructed on first use: weftc's options in other files name it.
  static cl::OptionCategory category("weftc options");
  return category;
}

namespace weftc {
cl::opt<bool> flashAttention(
    "flash-attention",
    cl::desc("Fuse each core attention into one weft.attention (softmax(q "
             "k^T scale, causal) [dropout] v) that keeps no [s, s] "
             "activations and recomputes them in the backward "
             "(FlashAttention; cuDNN's fused attention on a GPU)"),
    cl::init(false), cl::cat(optionCategory()));
cl::opt<int64_t> microbatches(
    "microbatches",
    cl::desc("Split the global batch into M micro-batches per step; gradients "
             "accumulate, one optimizer step (default 1)"),
    cl::init(1), cl::cat(optionCategory()));
cl::opt<int64_t> pipelineParallel(
    "pipeline-parallel",
    cl::desc("Split the training step into P pipeline stages, one MPI rank "
             "each (default 1)"),
    cl::init(1), cl::cat(optionCategory()));
cl::opt<int64_t> tensorParallel(
    "tensor-parallel",
    cl::desc("Megatron tensor parallelism: shard each MLP and attention "
             "block over T ranks per stage (default 1)"),
    cl::init(1), cl::cat(optionCategory()));
cl::opt<int64_t> dataParallel(
    "data-parallel",
    cl::desc("Data parallelism (DDP): D replicas, each training on a "
             "contiguous 1/D of the global batch; gradients averaged in "
             "buckets (default 1)"),
    cl::init(1), cl::cat(optionCategory()));
cl::opt<int64_t> zeroStage(
    "zero-stage",
    cl::desc("ZeRO over the data axis (needs --data-parallel D): 0 "
             "(default) replicated, 1 optimizer state sharded, 2 and "
             "gradients, 3 and parameters (gathered around each use)"),
    cl::init(0), cl::cat(optionCategory()));
cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("Megatron sequence parallelism (needs --tensor-parallel T): "
             "LayerNorm, dropout and the residual stream on 1/T of the "
             "sequence; g becomes a reduce-scatter, f an all-gather"),
    cl::init(false), cl::cat(optionCategory()));
cl::opt<std::string> schedule(
    "schedule",
    cl::desc("Pipeline schedule: 1f1b (default), gpipe, interleaved "
             "(Megatron-LM's, --virtual-stages chunks per rank), zb-h1, "
             "zb-h2 or zb-v (zero bubble: weight gradients in the bubbles, "
             "Qi et al. 2024; zb-v runs two chunks per rank)"),
    cl::init("1f1b"), cl::cat(optionCategory()));
cl::opt<int64_t> virtualStages(
    "virtual-stages",
    cl::desc("Model chunks per pipeline rank under --schedule interleaved "
             "(Megatron-LM's --num-layers-per-virtual-pipeline-stage as a "
             "count; default 2; needs --microbatches a multiple of "
             "--pipeline-parallel)"),
    cl::init(2), cl::cat(optionCategory()));
cl::opt<std::string> recompute(
    "recompute",
    cl::desc("Activation recompute: none (default), full (checkpoint each "
             "stage's forward per micro-batch and recompute it in the "
             "backward; under GPipe all but the last micro-batch) or "
             "selective (recompute only core attention, as Megatron-LM)"),
    cl::init("none"), cl::cat(optionCategory()));
cl::opt<std::string> recomputeGranularity(
    "recompute-granularity",
    cl::desc("Regions of --recompute=full: stage (default: the stage's "
             "forward per micro-batch, as torchgpipe) or layer (each "
             "repeated block of the graph, a transformer layer keeping only "
             "its input, as Megatron-LM)"),
    cl::init("stage"), cl::cat(optionCategory()));
} // namespace weftc

void weftc::setLayoutFlags(const weft::Layout &layout) {
  pipelineParallel = layout.pipeline;
  tensorParallel = layout.tensor;
  dataParallel = layout.data;
  microbatches = layout.microbatches;
  schedule = weft::scheduleName(layout.schedule).str();
  virtualStages = layout.virtualStages;
  recompute = layout.recompute;
  recomputeGranularity = layout.granularity;
  sequenceParallel = layout.sequenceParallel;
  zeroStage = layout.zeroStage;
  flashAttention = layout.flashAttention;
}

weft::Layout weftc::layoutOfFlags() {
  weft::Layout layout;
  layout.pipeline = pipelineParallel;
  layout.tensor = tensorParallel;
  layout.data = dataParallel;
  layout.microbatches = microbatches;
  // An unknown name is weftc's error before any search.
  layout.schedule =
      weft::scheduleNamed(schedule).value_or(weft::ScheduleKind::OneFOneB);
  layout.virtualStages = virtualStages;
  layout.recompute = recompute;
  layout.granularity = recomputeGranularity;
  layout.sequenceParallel = sequenceParallel;
  layout.zeroStage = zeroStage;
  layout.flashAttention = flashAttention;
  return layout;
}
