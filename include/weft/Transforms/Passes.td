//===- Passes.td - weft passes -------------------------------*- tablegen -*-===//

#ifndef WEFT_TRANSFORMS_PASSES_TD
#define WEFT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"
// Mixed precision and loss scaling (weft-mixed-precision, weft-loss-scaling).
include "weft/Transforms/PrecisionPasses.td"
// The fusions before autodiff (weft-fuse-gelu, weft-fuse-attention).
include "weft/Transforms/FusionPasses.td"

include "weft/Transforms/OptimizerPasses.td"
// Printers for lit (weft-test-print-cost, -memory, -task-orders).
include "weft/Transforms/TestPasses.td"

def CreateDeviceMesh : Pass<"weft-create-device-mesh", "mlir::ModuleOp"> {
  let summary = "Add the device mesh the step runs on";
  let description = [{
    Adds `shard.grid @mesh` (MLIR's upstream `shard` dialect) with the shape
    `pipeline x data x tensor` and the axis names in `weft.mesh_axes`
    (`weft/Dialect/Weft/IR/DeviceMesh.h`). Later passes and plan emission
    read it: a rank's mesh coordinates are its row-major index over the shape
    (tensor fastest, then data, then pipeline, as Megatron-LM orders ranks).

    ```mlir
    shard.grid @mesh(shape = 2x1x1) {weft.mesh_axes = ["pipeline", "data", "tensor"]}
    ```
    A module that has a mesh keeps it when it is the same, and is an error
    otherwise.

    With `data-shard` S, 1 < S < D, ZeRO shards over groups of S replicas
    (MindSpore's optimizer-parallel `shard_size`): the pass also adds
    `shard.grid @zero_mesh` of shape
    `pipeline x data_replica x data_shard x tensor` = P x D/S x S x T, the
    same devices in the same order (data coordinate d = data_replica S +
    data_shard), over which weft-data-parallel's ZeRO collectives run.

    Errors: a size < 1; a data-shard that does not divide D.
  }];
  let options = [
    Option<"pipeline", "pipeline", "int64_t", /*default=*/"1",
           "Pipeline stages (P)">,
    Option<"data", "data", "int64_t", /*default=*/"1",
           "Data-parallel replicas (D)">,
    Option<"tensor", "tensor", "int64_t", /*default=*/"1",
           "Tensor-parallel ranks (T)">,
    Option<"dataShard", "data-shard", "int64_t", /*default=*/"0",
           "ZeRO's sharding group size S (divides D; 0 or D: the whole "
           "data axis)">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect"];
}

def SplitTensorParallel : Pass<"weft-split-tensor-parallel",
                                "mlir::func::FuncOp"> {
  let summary = "Megatron tensor parallelism: shard the MLP and attention "
                "blocks over the mesh's tensor axis";
  let description = [{
    Rewrites a forward graph into the program each of the T ranks of the
    device mesh's `tensor` axis runs (T from `shard.grid @mesh`; nothing to
    do when T is 1). The blocks are found by `weft/Analysis/TensorParallel.h`
    on the graph's structure: column-parallel linears (the QKV projection,
    the first MLP linear: each rank computes T-th of the output features,
    for a fused QKV a T-th of each of Q, K and V), then ops that keep the
    shard local (bias, GELU, the heads of core attention), then
    row-parallel linears (the output projection, the second MLP linear:
    each rank a partial sum). Shoeybi et al., "Megatron-LM" (2019), Section
    3; Korthikanti et al. (2022), Figure 4.

    Sharded values get their local types, reshapes and splits their local
    sizes, and sharded parameters `weft.shard = {dim, blocks}` (the slice
    of the ONNX initializer a rank loads). Before each column-parallel
    linear the activation passes `weft.copy_to_tensor_parallel` (f: its
    gradient is all-reduced); after each row-parallel linear,
    `shard.all_reduce` over the tensor axis (g), before the bias:

    ```mlir
    %xf = weft.copy_to_tensor_parallel %x {grid = @mesh, grid_axes = array<i16: 2>} : tensor<8x64x128xf32>
    %h = weft.matmul %xf, %w1 : (tensor<8x64x128xf32>, tensor<128x256xf32>) -> tensor<8x64x256xf32>
    ...
    %p = weft.matmul %a, %w2 : (tensor<8x64x256xf32>, tensor<256x128xf32>) -> tensor<8x64x128xf32>
    %y = shard.all_reduce %p on @mesh grid_axes = [2] : tensor<8x64x128xf32> -> tensor<8x64x128xf32>
    ```
    Errors: an op inside a block that cannot keep the shard local (named,
    with the block's first linear), unless `fallback=replicate`, which
    leaves that block replicated with a warning.
  }];
  let options = [
    Option<"fallback", "fallback", "std::string", /*default=*/"\"error\"",
           "A block with an op the split cannot handle: error | replicate">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect", "weft::WeftDialect"];
}

def SplitSequenceParallel : Pass<"weft-split-sequence-parallel",
                                  "mlir::func::FuncOp"> {
  let summary = "Megatron sequence parallelism: LayerNorm, dropout and the "
                "residual stream on 1/T of the sequence";
  let description = [{
    Runs after `weft-split-tensor-parallel` on the forward graph. The
    region between Megatron's g and the next f (LayerNorms, dropouts, bias
    and residual adds; found by `weft/Analysis/SequenceParallel.h` from the
    token embedding, by structure) is sharded along the sequence over the
    mesh's tensor axis: every all-reduce that enters it becomes a
    `shard.reduce_scatter` along the sequence, every value that leaves it
    (into f's copy, or any op that needs the whole sequence) a
    `shard.all_gather`. Korthikanti et al. (2022), Section 4.2.2, Figure 5.

    ```mlir
    %r = shard.reduce_scatter %p on @mesh grid_axes = [2] scatter_axis = 1 : tensor<8x64x128xf32> -> tensor<8x32x128xf32>
    ... layer_norm, dropout, add on tensor<8x32x128xf32> ...
    %x = shard.all_gather %n on @mesh grid_axes = [2] gather_axis = 1 : tensor<8x32x128xf32> -> tensor<8x64x128xf32>
    %xf = weft.copy_to_tensor_parallel %x {grid = @mesh, grid_axes = array<i16: 2>} : tensor<8x64x128xf32>
    ```
    Replicated operands read along the sequence (a position embedding) are
    sliced to the rank's part (`shard.all_slice`, whose adjoint is an
    all-gather); those broadcast along it that depend on a parameter
    (LayerNorm weights, biases) get `weft.copy_to_tensor_parallel`, whose
    adjoint all-reduces their partial gradients. Dropouts get
    `weft.shard = {dim, blocks = 1}`: each rank draws its part of the whole
    mask. weft-autodiff turns f's all-reduce followed by the all-gather's
    adjoint slice into one reduce-scatter.

    Errors: no tensor axis, no token embedding, a sequence length T does not
    divide, operands disagreeing on the sequence dimension.
  }];
  let dependentDialects = ["mlir::shard::ShardDialect", "weft::WeftDialect"];
}

def RegatherSequenceParallel : Pass<"weft-regather-sequence-parallel",
                                     "mlir::func::FuncOp"> {
  let summary = "Sequence parallelism: all-gather a linear's input again in "
                "the backward instead of keeping it";
  let description = [{
    Runs on the training step (after weft-checkpoint). Each forward
    `shard.all_gather` whose result (or f's `weft.copy_to_tensor_parallel`
    of it) a backward op reads, the weight gradient of a column-parallel
    linear, is cloned right before the first such op of its stage and
    micro-batch (`#weft.task<R, ...>`, run in the backward task), and the backward reads
    the clone: the step keeps the sequence shard, not the gathered tensor
    (Korthikanti et al. 2022, Section 4.2.2: activation memory sbh/t (34 +
    5as/h) per layer with tensor and sequence parallelism). One extra
    all-gather per column-parallel linear and micro-batch.
  }];
  let dependentDialects = ["mlir::shard::ShardDialect", "weft::WeftDialect"];
}

def OverlapCollectives : Pass<"weft-overlap-collectives",
                               "mlir::func::FuncOp"> {
  let summary = "Post each collective early and wait for it late, so compute "
                "overlaps it";
  let description = [{
    Runs last on a rank's program (after `weft-schedule` when pipelined).
    Each `shard.all_reduce`, `shard.all_gather` and `shard.reduce_scatter`
    becomes a post, completed by a `weft.wait_collective` that every reader
    of the result reads instead:

    1. post early: the op computing the collective's operand, when only the
       collective reads it, moves up past the ops of its task (kind and
       micro-batch) it does not read from (a gemm whose result reaches the
       collective through reshapes moves, and its reshapes follow it); an
       op that only accumulates a micro-batch's weight gradient into the
       running sums in place stops only moves touching those sums; the
       collective moves up past
       other posts and at most one op it does not read from (enough for the
       regathered input of a sequence-parallel linear to be all-gathered
       while the input gradient's GEMM runs, without gathering it at the
       start of the task);
    2. wait late: the wait sinks to the first op that reads the result, the
       end of the task, or an op updating a buffer in place;
    3. at most two data-parallel gradient buckets' reduce-scatters (ZeRO 1
       to 3, `weft.bucket`) in flight within a task: the oldest's wait
       moves up before the third bucket is packed. Each would otherwise
       wait at the end of its micro-batch's backward, holding every
       unsharded bucket of the rank at once, the memory ZeRO-2 and 3 exist
       to save; with two, one bucket reduces while the next one's
       gradients are computed (double buffering). All-reduced buckets
       (no ZeRO) are read by the update, so they stay live until then
       whenever they are waited for, and keep their waits.

    In a tensor-parallel layer's backward the all-reduce (or, with sequence
    parallelism, the reduce-scatter) of a linear's input gradient is then
    in flight while the weight gradient is computed, the overlap
    Megatron-LM's `LinearWithGradAccumulationAndAsyncCommunication` builds
    by hand (Korthikanti et al. 2022, Section 4.2.2). Posts never pass a
    transfer or an in-place update; they may pass each other, since the
    members of a group run one function and so post in one order. The
    collective's operand stays live until the wait (MPI's rule for a
    non-blocking collective's send buffer).
    ```mlir
    %g = weft.matmul %dy, %w ...               // the input gradient
    %p = shard.all_reduce %g on @mesh grid_axes = [2] : ...
    %dw = weft.matmul %x, %dy ...              // overlaps the all-reduce
    %s = weft.wait_collective %p, %g : tensor<8x64xf32> -> tensor<8x64xf32>
    ```
  }];
  let dependentDialects = ["mlir::shard::ShardDialect", "weft::WeftDialect"];
}

def PartitionPipeline : Pass<"weft-partition-pipeline", "mlir::func::FuncOp"> {
  let summary = "Assign every forward op to one of P pipeline stages";
  let description = [{
    Splits the forward graph (a model function before `weft-autodiff`) into
    `stages` contiguous pieces of its op order, so that the slowest stage is
    as fast as possible, and sets each op's stage (`weft.task = #weft.task<F, stage = s>`); the function
    gets `weft.pipeline_stages = P`. Constants and views are free and go
    with their users (constants are copied to every stage that uses one).

    The work item is one op (constants excluded). An item costs its roofline
    time (`weft/Analysis/CostModel.h`), times 3 when it lies on a parameter's
    path, because its backward pass costs about twice its forward
    (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
    Clusters Using Megatron-LM", SC 2021, section 3.5). A cut after item i
    costs the time to send every value that crosses it (twice for
    differentiable values: the activation forward, its gradient backward),
    charged to the stages on both sides. The partition minimising the
    bottleneck is found exactly by dynamic programming
    (`weft/Analysis/Partition.h`; Skiena, "The Algorithm Design Manual",
    section 8.5). In a model of at least `stages` repeated layers
    (weft/Analysis/RepeatedLayers.h: a transformer's blocks), only the
    places past which a single activation is live are cut
    (`residualSegments`: the residual stream between blocks and between
    their halves), as Megatron-LM assigns whole layers: the bottleneck alone cut inside blocks to even
    out the embedding and the head, and under sequence parallelism after an
    all-gather, sending and keeping the whole sequence. `balance=2,3,3`
    instead gives the number of items per stage (torchgpipe's `balance`,
    counted in ops rather than layers), wherever it cuts.

    Backward ops later go to the stage of their forward op (`weft-autodiff`
    copies the tag); parameters live on every stage that uses them.

    ```mlir
    %0 = weft.matmul %x, %w0 {weft.task = #weft.task<F, stage = 0>} : ...
    %1 = weft.relu %0 {weft.task = #weft.task<F, stage = 0>} : ...
    %2 = weft.matmul %1, %w1 {weft.task = #weft.task<F, stage = 1>} : ...
    ```
    With `ranks=P` fewer than `stages=S` (model chunks: S = V P), each
    pipeline rank runs several stages, placed as `placement` says and
    recorded in `weft.stage_ranks` (stage s runs on rank stage_ranks[s]):
    `loop`, Megatron-LM's interleaving (Narayanan et al. 2021, section
    2.2.2: stage s on rank s mod P), or `v`, ZB-V's (Qi et al. 2024: rank r
    runs stages r and 2P-1-r).

    Errors: `stages` < 1 or larger than the number of ops; a `balance` whose
    length is not `stages`, with a count < 1, or whose sum is not the number
    of ops; `ranks` not dividing `stages`, or `v` with other than 2 P stages.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "Pipeline stages (P, or V P with model chunks)">,
    ListOption<"balance", "balance", "int64_t",
               "Ops per stage (overrides the cost-based partition)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "Pipeline ranks the stages are placed on (0: one per stage)">,
    Option<"placement", "placement", "std::string", /*default=*/"\"loop\"",
           "With ranks < stages: loop (stage s on rank s mod ranks) or v "
           "(rank r runs stages r and 2 ranks - 1 - r)">,
    Option<"deviceModel", "device-model", "std::string", /*default=*/"",
           "Device model whose rates time the ops (a name in bench/devices or "
           "a JSON file; default: the CPU default of CostModel.h)">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def Autodiff : Pass<"weft-autodiff", "mlir::func::FuncOp"> {
  let summary = "Append the backward pass: the gradient of every parameter";
  let description = [{
    Turns a model function whose single result is a scalar float loss into
    one that also returns the gradient of the loss with respect to every
    parameter argument (`weft.param`), by reverse-mode differentiation: ops
    are visited in reverse order and each op's `GradientOpInterface` rule
    turns its result gradients into operand gradients; a value used several
    times accumulates (adds) the gradients of its uses. Only values that
    depend on a parameter and have a float type get gradients, so integer,
    shape and constant paths produce no backward ops.

    Input:
    ```mlir
    func.func @main(%x: tensor<2x3xf32> {weft.input = "x"},
                    %w: tensor<3x1xf32> {weft.param = "w"}) -> tensor<f32> {
      %y = weft.matmul %x, %w : ...
      %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : ...
      return %l : tensor<f32>
    }
    ```
    Output: the same ops, then the backward ops, and
    `return %l, %dw : tensor<f32>, tensor<3x1xf32>` with the gradient result
    marked `{weft.grad = "w"}`.

    Pre-condition: one result, a scalar float (the loss), and at least one
    parameter the loss depends on; every op on a path from a parameter to the
    loss has a gradient rule. Each violation is an error naming the op.

    The seed, d step / d loss, is 1 by default. When the step's loss is the
    mean over `microbatches` M micro-batches (weft-accumulate-microbatches)
    and `replicas` D data-parallel replicas (weft-data-parallel), it is
    this backward's share, 1/(M D) (times f16's loss scale): what
    `(loss / M).backward()` under DistributedDataParallel's averaging
    computes (DDP divides by D before its all-reduce; Megatron-LM scales
    the loss by 1/M). Those passes then only sum, with no pass over the
    gradients after the last micro-batch or all-reduce. The function
    carries `weft.seed_microbatches = M` and `weft.seed_replicas = D` for
    them, each checked against the pass's own M or D.

    `split-weight-gradients` splits the backward into B and W (Qi et al.
    2024, "Zero Bubble Pipeline Parallelism", Section 2): the ops the
    gradient of an activation (a forward op's result) needs are B
    (`#weft.task<B>`), the rest, which only parameters' gradients need (a
    linear's dW = x^T dY, a bias's sum), W (`#weft.task<W>`), which a
    zero-bubble schedule runs later. A W op reads its layer's input and the
    output gradient, so those stay alive until it runs.
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Micro-batches the step's loss is the mean over (M)">,
    Option<"replicas", "replicas", "int64_t", /*default=*/"1",
           "Data-parallel replicas the step's loss is the mean over (D)">,
    Option<"splitWeightGradients", "split-weight-gradients", "bool",
           /*default=*/"false",
           "Mark the backward's weight-gradient-only ops W, the rest B">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def AccumulateMicrobatches : Pass<"weft-accumulate-microbatches",
                                  "mlir::func::FuncOp"> {
  let summary = "Run the differentiated step on M micro-batches, summing gradients";
  let description = [{
    GPipe's micro-batch semantics on one rank: the function (from
    weft-autodiff: loss and parameter gradients of one micro-batch) becomes
    one over the global batch, M times as large in dim 0 of every model
    input. Micro-batch k slices its inputs from the global batch, runs a
    copy of the forward and backward ops (their `#weft.task` given `micro_batch = k`), and
    the step returns the sum of the micro-batch losses scaled by 1/M and the
    sum of their gradients scaled by 1/M, which is the gradient of the
    logged loss. When weft-autodiff seeded each backward with its share
    (`weft.seed_microbatches`, which must equal M) the gradients are only
    summed: no pass over them after the last micro-batch. Batch normalisation sees per-micro-batch statistics, and
    its running statistics are updated once per micro-batch, in order (as
    torch running the micro-batches would). A gradient that weft-autodiff
    adds from several uses of a parameter (a tied embedding and head) is
    summed per use over the micro-batches, and the totals added once: under
    a pipeline, one transfer per step rather than one per micro-batch; on
    every layout, so that all sum in one order.

    Pre-condition: the output of weft-autodiff, imported at micro-batch size.
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Micro-batches per step (M)">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def InsertSendRecv : Pass<"weft-insert-send-recv", "mlir::func::FuncOp"> {
  let summary = "Turn every value that crosses pipeline stages into a transfer";
  let description = [{
    Runs on a staged training step (`weft-partition-pipeline`, then autodiff,
    micro-batches and optimizer). First it places the ops that have no stage
    yet: an op goes to the latest stage among its operands' producers, or,
    when no operand is staged (micro-batch input slices), to the earliest
    stage among its users. Constants stay unstaged: each stage gets its own
    copy. A parameter used on several stages (tied embeddings) is held by
    each of them: its optimizer update is cloned onto every such stage, so the
    summed gradient is sent to each and all copies stay equal (Megatron-LM's
    treatment of the tied word embedding, Shoeybi et al. 2019).

    Then every value produced on stage j and used on stage k != j becomes a
    non-blocking send on j and a receive on k, sent directly from j to k even
    when k > j + 1 (torchgpipe's portals, Kim et al. 2020, section 3.3):
    ```mlir
    %req = weft.isend %v {peer = 3 : i64, tag = 7 : i64, weft.task = #weft.task<F, stage = 0>}
    %buf, %r = weft.irecv {peer = 0 : i64, tag = 7 : i64, weft.task = #weft.task<F, stage = 3>}
    %v3 = weft.wait_recv %r, %buf {weft.task = #weft.task<F, stage = 3>}
    weft.wait_send %req, %v {weft.task = #weft.task<F, stage = 0>}
    ```
    The send is posted right after the producer and waited for at the end of
    the step; the receive is posted and waited for right before its first
    user. `weft-schedule` moves them to overlap compute. Transfer ops carry
    the task (micro-batch and kind) of the op they serve. Tags number the transfers
    from 0 in program order.

    Pre-condition: `weft.pipeline_stages` on the function; otherwise the pass
    does nothing.
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def HoistAccumulation : Pass<"weft-hoist-accumulation", "mlir::func::FuncOp"> {
  let summary = "Add each micro-batch's gradient to its running sum as soon "
                "as it exists";
  let description = [{
    Runs on a training step after `weft-accumulate-microbatches` and
    `weft-append-optimizer`, where `weft-data-parallel` does not run (one
    replica: that pass does the same first). Accumulation appends each
    gradient's sum over the micro-batches after the last micro-batch's
    whole step. On one stage they ran there, after every micro-batch's
    gradients (where `weft-fold-grad-accumulation` did not fold them);
    `weft-schedule` runs each in the task of its latest term but after
    all of that task's ops, so at the end of every backward a stage held
    each parameter's running sum and that micro-batch's own gradient:
    twice its gradients. Each add (and the 1/M
    scale) moves up to right after its latest operand and joins its task
    (HoistAccumulation.h), as PyTorch adds into `.grad` as each gradient is
    produced. The sums are the same adds in the same association: the
    same bits. On GPT-3 175B's Table 3 layout (t = 8, p = 8, interleaved
    x3, 64 micro-batches, bf16) rank 0's gradients at its peak fell from
    9.42 to 7.72 GB (the state: 5.65 GB), its arena from 66.4 to 64.7 GB.
  }];
}

def DataParallel : Pass<"weft-data-parallel", "mlir::func::FuncOp"> {
  let summary = "Average the gradients over the mesh's data axis in DDP's "
                "buckets, and the loss over the replicas";
  let description = [{
    Runs on a training step (after `weft-append-optimizer`, and after
    `weft-insert-send-recv` when pipelined); nothing to do when the mesh's
    `data` axis has size 1. Each of the D replicas computes the gradients of
    its contiguous 1/D of the batch; the update must see their mean, as
    PyTorch's DistributedDataParallel gives it (Li et al., "PyTorch
    Distributed", VLDB 2020, Section 3.2):

    1. Micro-batch accumulation's sums move up to right after their latest
       contribution (and join its task), so a gradient is complete when its
       last micro-batch's backward has produced it.
    2. The updates' gradients are grouped into buckets in the order they
       become ready, the reverse of the order the forward first uses their
       parameters, by DDP's rule (`weft/Analysis/GradientBuckets.h`): per
       stage and dtype, a bucket closes once it holds `bucket-cap-mb` MiB
       (the first one 1 MiB).
    3. Per bucket, right after its last gradient: the gradients flattened
       and concatenated, one `shard.all_reduce` (sum) over the data axis,
       marked `weft.bucket = k`; before the first update that reads it, the
       sum scaled by 1/D and split back into the gradients. When
       weft-autodiff seeded the backward with 1/D (`weft.seed_replicas`,
       which must equal D), as DDP divides before its all-reduce, the sum
       is the mean and is not scaled; the same holds for ZeRO's
       reduce-scatters below. With
       `weft-overlap-collectives` the all-reduce is posted there and waited
       for at the end of the backward, overlapping the rest of it.
    4. The loss (a scalar float result) is all-reduced and scaled by 1/D:
       every replica reports the whole batch's loss.

    ```mlir
    %f = weft.concat %g1, %g0 {axis = 0 : i64} : (tensor<6xf32>, tensor<4xf32>) -> tensor<10xf32>
    %s = shard.all_reduce %f on @mesh grid_axes = [1] {weft.bucket = 0 : i64} : tensor<10xf32> -> tensor<10xf32>
    ...
    %m = weft.mul %s, %inv_d {weft.task = #weft.task<U>} : (tensor<10xf32>, tensor<f32>) -> tensor<10xf32>
    %p:2 = weft.split %m {axis = 0 : i64, sizes = array<i64: 6, 4>} ...
    ```
    With `zero-stage` >= 1 (ZeRO, Rajbhandari et al., SC 2020, Section 5)
    the bucket's parameters of at least `shard-threshold-kb` KiB are
    sharded over the replicas by the flat split (ShardedBucket.h: each
    flattened, zero-padded to D ceil(n/D), replica r holding the r-th
    piece; no parameter shape has to divide by D), laid out rank-major so
    one `shard.reduce_scatter` hands each replica its piece of every
    gradient's sum. Each replica updates its piece of each parameter with
    optimizer state of that size (the state arguments keep their names and
    gain `weft.flat_shard`, the whole tensor's shape):

    - stage 1 (P_os): one reduce-scatter after the bucket's last gradient;
      the pieces of the parameters `shard.all_slice`d, updated, then one
      `shard.all_gather` per bucket and `weft.assign` back;
    - stage 2 (P_os+g): as stage 1, but with micro-batches one
      reduce-scatter per micro-batch, the pieces summed, so no whole
      gradient is accumulated across micro-batches;
    - stage 3 (P_os+g+p): as stage 2, and the parameter arguments
      themselves become pieces (`weft.flat_shard`): every op that reads one
      gets its own `shard.all_gather` right before it (forward, backward,
      each micro-batch), and the update writes the piece in place.

    Smaller parameters stay replicated and are all-reduced as above
    (MindSpore's optimizer-parallel `threshold`).

    When the module has `shard.grid @zero_mesh` (weft-create-device-mesh's
    `data-shard` S < D: MindSpore's `shard_size`), the pieces are over
    groups of S replicas: ZeRO's reduce-scatters, all-gathers and slices
    run over its `data_shard` axis, and each reduce-scatter's piece is
    all-reduced over `data_replica` (the groups holding the same piece).

    With `zero-prefetch` (stages 1 and 2; MindSpore's optimizer_level
    level1/level2 schedule) the parameter arguments are pieces between
    steps too: the update writes the piece in place, and one
    `shard.all_gather` per bucket is posted at the start of the step's
    forward (before the first op that reads a parameter; buckets in the
    order the forward reads them), each parameter's column sliced out right
    before its first reader, so the gather overlaps the forward instead of
    ending the step.

    Errors: a step without an optimizer update; a negative bucket-cap-mb or
    shard-threshold-kb; a zero stage outside 0..3; zero-prefetch without
    stage 1 or 2.
  }];
  let options = [
    Option<"bucketCapMb", "bucket-cap-mb", "double",
           /*default=*/"::weft::kBucketCapMb",
           "Bucket size limit in MiB (DDP's bucket_cap_mb); 0: one bucket "
           "per gradient">,
    Option<"zeroStage", "zero-stage", "int64_t", /*default=*/"0",
           "0: replicated; ZeRO over the data axis: 1 optimizer state, 2 "
           "and gradients, 3 and parameters sharded">,
    Option<"shardThresholdKb", "shard-threshold-kb", "double",
           /*default=*/"::weft::kShardThresholdKb",
           "With ZeRO: parameters under this many KiB stay replicated "
           "(MindSpore's optimizer-parallel threshold)">,
    Option<"zeroPrefetch", "zero-prefetch", "bool", /*default=*/"false",
           "Stages 1 and 2: parameters stay pieces between steps, gathered "
           "at the next step's start to overlap its forward (MindSpore's "
           "level1/level2)">,
  ];
  let dependentDialects = ["mlir::shard::ShardDialect", "weft::WeftDialect"];
}

def Schedule : Pass<"weft-schedule", "mlir::ModuleOp"> {
  let summary = "Split a pipelined step into one function per pipeline rank, in schedule order";
  let description = [{
    Takes the staged step of `weft-insert-send-recv` (`@main`) and replaces
    it with one function per pipeline rank, `@stage0` .. `@stage<P-1>`
    (with model chunks, `weft.stage_ranks`, a rank's stages together, listed
    in its `weft.chunk_stages`; each op's `#weft.task` names its chunk),
    each holding its ops in the order the pipeline schedule runs them
    (`weft/Analysis/Schedule.h`): `schedule=gpipe` (all forwards, then the
    backwards in reverse micro-batch order, torchgpipe's Algorithm 1),
    `schedule=1f1b` (warm-up forwards, one forward one backward, cool-down),
    or the zero-bubble `schedule=zb-h1|zb-h2` (Qi et al. 2024: 1F1B's shape
    with each W(i), the weight-gradient ops weft-autodiff split from the
    backward, run after a later B; `weft/Analysis/TaskOrder.h`). Under gpipe
    and 1f1b a W op runs in its B's task and is tagged B.
    An op belongs to the task F(i), B(i) or W(i) its `#weft.task` names
    (kind and micro-batch i);
    an op with neither (gradient sums across micro-batches) joins the latest
    task among its operands' and is tagged with it; optimizer updates come
    last. Within a task, program order is kept.

    Transfers are placed to overlap compute: a receive is posted at the start
    of the task before the one that needs it, the receives of one task in
    tag order, and each channel's receives in its sender's order (NCCL
    matches a pair of ranks' transfers by order; the plan loader checks both
    ends post a channel's transfers in one order): a receive whose
    successor on its channel is due earlier is posted with it. A send of F(i)'s activation is
    waited for at the end of B(i) on its stage (the receiver has run F(i) by
    then); other sends (gradients) at the end of the step.

    Each stage function takes the arguments its ops use (inputs,
    parameters, state: every stage holding a parameter has its own copy),
    copies the constants it uses, and returns the results its ops produce.
    It is marked `weft.stage`, `weft.pipeline_stages`, `weft.micro_batches`
    and `weft.schedule`.

    ```mlir
    func.func @stage0(...) attributes {weft.stage = 0 : i64, weft.schedule = "1f1b", ...}
    func.func @stage1(...) -> (tensor<f32> {weft.output = "loss"}, ...)
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, interleaved, zb-h1, zb-h2 or zb-v">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def SimulatePipeline : Pass<"weft-simulate-pipeline", "mlir::ModuleOp"> {
  let summary = "Check that a pipeline schedule completes, and predict its timeline";
  let description = [{
    Simulates one step of the stage functions of a scheduled module
    (`weft-schedule`, or written by hand) on the cost model
    (`weft/Analysis/PipelineSimulation.h`): per-rank clocks, each wait
    blocking until the other side of its transfer is posted. A schedule that
    cannot complete is an error at the op where a stage blocks, naming the
    stage, the transfer (tag and peer) and what the peer is blocked on:
    ```
    error: deadlock: stage 0 blocks at its op 1 (wait_recv of tag 1 from
    stage 1, task F0): the matching isend is never posted; stage 1 is itself
    blocked at its op 1 (wait_recv of tag 0 from stage 0)
    ```
    With `print`, writes the prediction to stderr:
    ```
    pipeline: stages=2 step_us=812.0 bubble=0.2000
    pipeline: stage 0 busy_us=650.0
    ```
    The IR is unchanged.
  }];
  let options = [
    Option<"print", "print", "bool", /*default=*/"false",
           "Print step time, per-stage busy time and bubble fraction">,
    Option<"deviceModel", "device-model", "std::string", /*default=*/"",
           "Device model whose rates time the ops (a name in bench/devices or "
           "a JSON file; default: the CPU default of CostModel.h)">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def Checkpoint : Pass<"weft-checkpoint", "mlir::func::FuncOp"> {
  let summary = "Activation checkpointing: recompute forward ops in the backward";
  let description = [{
    `policy=full` (torchgpipe's checkpointing, Chen et al. 2016), at stage
    granularity: for each pipeline stage and micro-batch, the forward ops
    whose results the backward reads are cloned right before the first
    backward op of that stage and micro-batch, and the backward reads the
    clones. Only the region's inputs stay alive from the forward to the
    backward: parameters, the micro-batch's input slice, activations
    received from the previous stage, and the results of ops that are never
    recomputed. The clones are tagged `#weft.task<R, ...>` (a forward
    recomputed in the micro-batch's backward task), so the schedule runs them at the start of the backward
    task, before it waits for the incoming gradient (the recompute overlaps
    that wait).

    Never recomputed: ops with in-place results or side effects (training
    batch normalization updates its running statistics in place; running it
    twice would update them twice). Dropout is recomputed: its mask is keyed
    by (`weft.rng_id`, micro-batch, step), and the clone keeps the original's
    `weft.rng_id`, so the recomputed mask is bit-identical.

    `policy=selective` is Megatron-LM's selective recompute (Korthikanti et
    al., "Reducing Activation Recomputation in Large Transformer Models",
    2022, section 5): only core attention is recomputed, the large
    activations that are cheap to recompute (QK^T, its scale and mask,
    softmax, dropout, attention x V); everything else is kept. Core
    attention is matched structurally from each softmax: backwards through
    single-use mul/div/add/sub/where ops of the scores' shape to the matmul
    QK^T, forwards through an optional dropout to the matmul whose lhs are
    the probabilities. The gpt example and torch.nn.MultiheadAttention's
    export both match; a softmax outside attention (no matmul on both sides)
    does not. Each attention is recomputed right before the first backward
    op that reads it, so one layer's scores are live again at a time.

    `granularity=layer` (full policy only) splits each (stage, micro-batch)
    region into layers detected from the graph structure. First it cuts at
    every point of the forward where a single activation is live from one
    part to the next: the residual stream between transformer blocks or
    residual blocks, and between a block's attention and MLP halves. Then
    it groups the parts into the model's repeated unit: the longest run of
    back-to-back identical sequences of parts (compared by op names), so a
    transformer layer is its attention and MLP parts together and a
    residual block is one part; parts outside the run stay as they are.
    Each layer keeps only its input (Megatron's 2sbh per layer) and is
    recomputed right before the first backward op that reads it, so only
    one layer's activations are live again at a time (Megatron's full
    recompute per layer; Chen et al. 2016's segments). `granularity=stage`
    recomputes the whole stage at once before its backward (torchgpipe).

    `except-last` skips the last micro-batch, whose backward runs right after
    its forward under GPipe (torchgpipe's `checkpoint='except_last'`).

    Runs after `weft-insert-send-recv` (every op has its stage, received
    activations are region inputs) and before `weft-schedule`; on one rank,
    after the optimizer. `policy=none` does nothing.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"none\"",
           "none, full or selective">,
    Option<"exceptLast", "except-last", "bool", /*default=*/"false",
           "Do not recompute the last micro-batch (GPipe)">,
    Option<"granularity", "granularity", "std::string", /*default=*/"\"stage\"",
           "Regions of full recompute: stage or layer">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def PlanMemory : Pass<"weft-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Report a rank's planned memory: peak and breakdown by category";
  let description = [{
    Plans the function's arena (`weft/Analysis/MemoryPlan.h`: every buffer's
    exact byte size and lifetime, greedy-by-size placement) and prints to
    stderr the bytes live at its busiest op by category
    (`weft/Analysis/MemoryBreakdown.h`: parameters, optimizer state, model
    state, inputs, constants, kept activations, gradients, temporaries,
    communication), the arena, and the most kept-activation bytes at any op.
    The plan emitter lays out the same arena, whose peak weft-run measures.
    The IR is unchanged.

    ```
    memory @stage0: parameters 2078720
    memory @stage0: kept_activations 7346176
    memory @stage0: live_at_peak 16914996 at op 1968
    memory @stage0: arena 17481476
    memory @stage0: max_kept_activations 7346176
    ```

    `activation-dtype=f16` (or `bf16`, `f32`) sizes every float tensor the
    step computes at that width, as under mixed precision; parameters, state,
    inputs, constants and masks keep their type (`MemoryPlanOptions`).

    With `list-kept`, it first prints every activation kept for the backward,
    in op order: the producing op, its result type and bytes, e.g.
    `memory @mlp: kept weft.relu tensor<4x8xf32> 128`.
  }];
  let options = [
    Option<"listKept", "list-kept", "bool", /*default=*/"false",
           "Print each kept activation: producing op, type, bytes">,
    Option<"activationDtype", "activation-dtype", "std::string",
           /*default=*/"\"\"",
           "Size computed float tensors as f32, f16 or bf16 (default: as typed)">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

#endif // WEFT_TRANSFORMS_PASSES_TD
