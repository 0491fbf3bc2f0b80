//===- WeftDialect.h - the weft dialect -------------------------*- C++ -*-===//
#ifndef WEFT_DIALECT_WEFT_IR_WEFTDIALECT_H
#define WEFT_DIALECT_WEFT_IR_WEFTDIALECT_H

#include "mlir/IR/Dialect.h"

#include <memory>

namespace weft {
class KernelRuleCache;
} // namespace weft

#include "weft/Dialect/Weft/IR/WeftDialect.h.inc"

namespace weft {
/// Function-argument attribute names: which model input, parameter or state
/// (ONNX initializer) an argument of the model's `func.func` stands for.
inline constexpr llvm::StringLiteral kInputAttr = "weft.input";
inline constexpr llvm::StringLiteral kParamAttr = "weft.param";
inline constexpr llvm::StringLiteral kStateAttr = "weft.state";
/// Unit attribute beside weft.state: a frozen initializer (`weftc --frozen`,
/// or the model's `weft.frozen` metadata), a constant the step only reads.
inline constexpr llvm::StringLiteral kFrozenAttr = "weft.frozen";
/// Optimizer state (Adam moments, momentum buffers): zero-initialised.
inline constexpr llvm::StringLiteral kOptimizerStateAttr = "weft.optimizer_state";
/// Beside weft.optimizer_state on a mixed-precision master copy (f32): the
/// parameter (ONNX initializer) it is the master of, whose exact f32 value
/// initialises it.
inline constexpr llvm::StringLiteral kMasterOfAttr = "weft.master_of";
/// Unit attribute beside weft.optimizer_state on the loss scaler's state
/// (f16 training: tensor<3xf32> [scale, growth_tracker, skipped_steps],
/// weft.update_loss_scale): the backward is seeded with its scale.
inline constexpr llvm::StringLiteral kLossScalerAttr = "weft.loss_scaler";
/// On a gather reading an embedding table (an I64Attr, set by the importer
/// from the model's `weft.padding_idx` metadata): torch's nn.Embedding
/// padding_idx, the row whose gradient from this lookup is zero. Kept when
/// weft-split-tensor-parallel makes the gather vocab-parallel.
inline constexpr llvm::StringLiteral kPaddingIdxAttr = "weft.padding_idx";
/// On the model function's gradient results (weft-autodiff): the name of
/// the parameter whose gradient it is.
inline constexpr llvm::StringLiteral kGradAttr = "weft.grad";
/// GradScaler's initial scale (torch.amp.GradScaler(init_scale=2.0**16)).
inline constexpr double kInitialLossScale = 65536.0;
/// On ops: which task of the step their work belongs to, a
/// #weft.task<kind, micro_batch, stage, chunk> (Task.h).
inline constexpr llvm::StringLiteral kTaskAttr = "weft.task";
/// On a weft.add that sums micro-batches (weft-accumulate-microbatches)
/// whose running sum nothing else reads: it adds in place, into the sum's
/// bytes (inPlaceOperand), so the sum is one buffer for every micro-batch.
inline constexpr llvm::StringLiteral kAccumulateAttr = "weft.accumulate";
/// On a stage function (weft-schedule): the pipeline stage (0-based) it
/// runs; an op's stage is in its weft.task.
inline constexpr llvm::StringLiteral kStageAttr = "weft.stage";
/// On dropouts and fused attentions with a dropout (weft-checkpoint): the
/// key of their mask, which a recomputed clone shares with its original.
inline constexpr llvm::StringLiteral kRngIdAttr = "weft.rng_id";
/// On the model function from weft-autodiff until the pass that sums the
/// shares: the backward's seed is 1/M of a mean over M micro-batches
/// (weft-accumulate-microbatches) and 1/D of one over D data-parallel
/// replicas (weft-data-parallel), so those passes only sum.
inline constexpr llvm::StringLiteral kSeedMicrobatchesAttr =
    "weft.seed_microbatches";
inline constexpr llvm::StringLiteral kSeedReplicasAttr = "weft.seed_replicas";
/// On the model function: the number of pipeline stages it is split into.
inline constexpr llvm::StringLiteral kPipelineStagesAttr =
    "weft.pipeline_stages";
/// On the model function when a pipeline rank runs several stages (model
/// chunks: interleaved 1F1B, ZB-V; weft-partition-pipeline): stage s runs
/// on pipeline rank stage_ranks[s] (a DenseI64ArrayAttr).
inline constexpr llvm::StringLiteral kStageRanksAttr = "weft.stage_ranks";
/// On a stage function running several model chunks (weft-schedule): the
/// stage each chunk is, by chunk (a DenseI64ArrayAttr); `weft.stage` is
/// then the function's pipeline rank.
inline constexpr llvm::StringLiteral kChunkStagesAttr = "weft.chunk_stages";
/// On a stage function (weft-schedule): the micro-batches of the step.
inline constexpr llvm::StringLiteral kMicroBatchesAttr = "weft.micro_batches";
/// On a parameter argument of a tensor-parallel step: which shard of the
/// ONNX initializer the argument holds, `{dim, blocks}`: dimension `dim`
/// (of size n) is read as [blocks, T, n / (blocks T)] and tensor rank t holds
/// [:, t, :] (blocks > 1 for fused projections, e.g. QKV: each of the three
/// is split). weft-split-tensor-parallel sets it; plan emission adds the
/// rank's index. On a dropout of a sharded value, the same: its mask is
/// that shard of the whole tensor's mask.
inline constexpr llvm::StringLiteral kShardAttr = "weft.shard";
/// On the model function's results that are updated parameters or
/// optimizer state: the argument's name (weft-append-optimizer).
inline constexpr llvm::StringLiteral kUpdateAttr = "weft.update";
/// On a data-parallel gradient all-reduce (weft-data-parallel): its
/// bucket's index, in the order the buckets become ready.
inline constexpr llvm::StringLiteral kBucketAttr = "weft.bucket";
/// On an argument sharded by ZeRO over the data axis (optimizer state from
/// stage 1, parameters at stage 3) and on the update of such a shard: the
/// shape of the whole (rank-local) tensor. The argument holds this
/// replica's s = ceil(n / D) elements of it, flattened and zero-padded to
/// D s elements (the flat split; plan emission adds the rank's index).
inline constexpr llvm::StringLiteral kFlatShardAttr = "weft.flat_shard";
/// On a sharded update (weft-data-parallel): the ZeRO stage that built it.
inline constexpr llvm::StringLiteral kZeroStageAttr = "weft.zero_stage";

/// Attaches weft's cost and gradient interfaces to the upstream `shard`
/// collectives (ShardInterfaces.cpp); the dialect does it when it loads.
void attachShardInterfaces(mlir::MLIRContext &ctx);
} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_WEFTDIALECT_H
