//===- WeftParallelOps.td - tensor-parallel region markers ---*- tablegen -*-===//
//
// The collectives of a tensor-parallel program are upstream `shard` ops
// (`shard.all_reduce`, `shard.all_gather`, `shard.all_slice`,
// `shard.reduce_scatter`) over the device mesh's `tensor` axis; weft gives
// them a cost and, under the convention below, a gradient
// (ShardInterfaces.cpp). The one op of Megatron's conjugate pair that is not
// a collective in the forward is defined here.
//
// Convention (Korthikanti et al. 2022, Fig. 4; Megatron-LM's mappings.py):
// in the per-rank program a replicated value carries its complete gradient
// on every rank, and a sharded value the complete gradient of its shard.
// Under it the adjoint of an all-reduce is the identity (Megatron's g), of
// an all-gather an all-slice, of an all-slice an all-gather, of a
// reduce-scatter an all-gather; and a replicated value that enters sharded
// computation gets partial gradients there, which `copy_to_tensor_parallel`
// (Megatron's f) sums with an all-reduce.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTPARALLELOPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTPARALLELOPS_TD

def Weft_CopyToTensorParallelOp : Weft_Op<"copy_to_tensor_parallel",
    [Pure, SameOperandsAndResultType,
     DeclareOpInterfaceMethods<GradientOpInterface>],
    ["getBytesRead", "getBytesWritten"]> {
  let lowering = ViewLowering;
  let backends = NoKernel;
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let summary = "Megatron's f: identity forward, all-reduce of the gradient.";
  let description = [{
    Marks a replicated value entering tensor-parallel computation (the input
    of a column-parallel linear). Forward: the identity (a view: no work, no
    bytes). Backward: the gradients the sharded computation produces for it
    are partial sums, one per rank of the mesh axes `grid_axes` of `grid`;
    the adjoint sums them with a `shard.all_reduce`.
    ```mlir
    %xf = weft.copy_to_tensor_parallel %x {grid = @mesh, grid_axes = array<i16: 2>} : tensor<8x64x128xf32>
    ```
    Source: Korthikanti et al., "Reducing Activation Recomputation in Large
    Transformer Models" (2022), Section 3 and Figure 4 (f and f̄).
  }];
  let arguments = (ins Weft_FloatTensor:$input, FlatSymbolRefAttr:$grid,
                       DenseI16ArrayAttr:$grid_axes);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
  let extraClassDefinition = [{
    int64_t $cppClass::getBytesRead() { return 0; }
    int64_t $cppClass::getBytesWritten() { return 0; }
  }];
}

//===----------------------------------------------------------------------===//
// Vocab parallelism (Megatron-LM's VocabParallelEmbedding and
// vocab_parallel_cross_entropy): a [V, h] table sharded by rows over the
// mesh axes `grid_axes`, rank r of the group holding rows [r V/T, (r+1) V/T).
// The plan gives each rank's kernels `start` = r V/T.
//===----------------------------------------------------------------------===//

class Weft_VocabParallelOp<string mnemonic, list<Trait> traits = [],
                           list<string> costOverrides = []>
    : Weft_Op<mnemonic, !listconcat(traits, [Pure]), costOverrides> {
  // The mesh axes are the compiler's: plan emission resolves them to the
  // rank's rows (`start`, `rows`).
  let compilerAttrs = ["grid", "grid_axes"];
}

def Weft_VocabParallelGatherOp : Weft_VocabParallelOp<"vocab_parallel_gather",
    [DeclareOpInterfaceMethods<GradientOpInterface>], ["getBytesRead"]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  // This rank's first row.
  let planAttrs = [Weft_PlanAttr<"start", "Int", 1>];
  let summary = "Embedding lookup in this rank's rows of a vocab-sharded table.";
  let description = [{
    `table: [V/T, h...]` (this rank's rows), `indices: [d...]` (whole-vocab
    ids) -> `[d..., h...]`: the row of each id this rank holds, zeros for
    the others. A `shard.all_reduce` over the axes sums the ranks' results
    into the embedding (Megatron's VocabParallelEmbedding). Cost: no FLOPs;
    reads the indices and the rows it returns.
  }];
  let arguments = (ins Weft_FloatTensor:$table,
                       Weft_IndexTensor:$indices,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$table `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_VocabParallelGatherGradOp : Weft_VocabParallelOp<"vocab_parallel_gather_grad", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let inPlace = [Weft_InPlace<0, 2>];
  // This rank's first row and its row count.
  let planAttrs = [Weft_PlanAttr<"start", "Int", 1>, Weft_PlanAttr<"rows", "Int", 1>];
  let summary = "d/d table of vocab_parallel_gather: scatter-add into this rank's rows.";
  let description = [{
    `grad: [d..., h...]`, `indices: [d...]` -> `[V/T, h...]` (the result
    type): row `id - start` accumulates every `grad` slice of an id this
    rank holds. Cost: 1 FLOP per element of `grad`. With `accumulate` (of
    the result's type: the shard's gradient from a tied, vocabulary-
    parallel LM head; weft-fold-gather-grad-add) the result is
    `accumulate` plus those rows, written over it in place, as
    `weft.gather_grad`'s accumulating form; `numel(result)` FLOPs more.
  }];
  let arguments = (ins Weft_FloatTensor:$grad,
                       Weft_IndexTensor:$indices,
                       Optional<Weft_FloatTensor>:$accumulate,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs Weft_FloatTensor:$table_grad);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $grad `,` $indices (`accumulate` $accumulate^)? attr-dict `:`
    functional-type(operands, results)
  }];
}

def Weft_VocabParallelCrossEntropyStatsOp
    : Weft_VocabParallelOp<"vocab_parallel_cross_entropy_stats"> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = PerInput<3>;
  // This rank's first class.
  let planAttrs = [Weft_PlanAttr<"start", "Int", 1>];
  let summary = "This rank's share of the softmax denominator and target score.";
  let description = [{
    `scores: [N, C/T]` (this rank's classes), `max: [N, 1]` (the row maxima
    over all ranks), `labels: [N]` -> `[N, 2]`: column 0 is
    `sum_c exp(scores[n, c] - max[n])`, column 1 the score of `labels[n]`
    when this rank holds that class, else 0. A `shard.all_reduce` sums
    them over the ranks. Cost: 3 FLOPs per score.
  }];
  let arguments = (ins Weft_FloatTensor:$scores, Weft_FloatTensor:$max,
                       Weft_IndexTensor:$labels,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes);
  let results = (outs Weft_FloatTensor:$stats);
  let assemblyFormat = "$scores `,` $max `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_VocabParallelCrossEntropyOp
    : Weft_VocabParallelOp<"vocab_parallel_cross_entropy",
                           [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = FullPrecision;
  let split = NoSplit;
  let flops = PerInput<2>;
  let summary = "Softmax cross-entropy over vocab-sharded scores, never gathered.";
  let description = [{
    `scores: [N, C/T]`, `max: [N, 1]`, `stats: [N, 2]` (summed over the
    ranks), `labels: [N]` -> `loss` (scalar, the mean over labels other than
    `ignore_index` of `max + log(stats[n, 0]) - stats[n, 1]`, the same on
    every rank) and `log_prob: [N, C/T]` (this rank's log-softmax). Megatron-
    LM's vocab_parallel_cross_entropy; equals ONNX SoftmaxCrossEntropyLoss
    (mean, no weights) over the whole vocabulary. Cost: 2 FLOPs per score.
  }];
  let arguments = (ins Weft_FloatTensor:$scores, Weft_FloatTensor:$max,
                       Weft_FloatTensor:$stats,
                       Weft_IndexTensor:$labels,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Weft_FloatTensor:$loss, Weft_FloatTensor:$log_prob);
  let assemblyFormat = "$scores `,` $max `,` $stats `,` $labels attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_VocabParallelCrossEntropyGradOp
    : Weft_VocabParallelOp<"vocab_parallel_cross_entropy_grad"> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<3>;
  // This rank's first class.
  let planAttrs = [Weft_PlanAttr<"start", "Int", 1>];
  let summary = "d/d scores of vocab_parallel_cross_entropy.";
  let description = [{
    `log_prob: [N, C/T]`, `labels: [N]`, `grad` (scalar) -> `[N, C/T]`:
    `(exp(log_prob) - onehot(labels - start)) * grad / count`, count the
    labels other than `ignore_index`; rows of ignored labels get 0.
    Cost: 3 FLOPs per element.
  }];
  let arguments = (ins Weft_FloatTensor:$log_prob,
                       Weft_IndexTensor:$labels,
                       Weft_FloatTensor:$grad,
                       FlatSymbolRefAttr:$grid, DenseI16ArrayAttr:$grid_axes,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Weft_FloatTensor:$scores_grad);
  let assemblyFormat = "$log_prob `,` $labels `,` $grad attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Overlap: a collective as a post and a wait
//===----------------------------------------------------------------------===//

def Weft_WaitCollectiveOp : Weft_WaitOp<"wait_collective",
    [AllTypesMatch<["posted", "value"]>]> {
  let summary = "Wait until a posted collective has completed; yields its "
                "result.";
  let description = [{
    Splits a `shard` collective into a post and a wait, as `weft.isend` and
    `weft.wait_send` split a transfer: once a `weft.wait_collective` reads
    the result `posted` of a `shard.all_reduce`, `shard.all_gather` or
    `shard.reduce_scatter`, that op only posts the collective (a
    non-blocking MPI or NCCL call) and the bytes of `posted` are undefined
    until this op, which blocks until the collective has completed and
    returns them: `value` is a view of `posted`'s bytes (no copy). `input`
    is the collective's operand, taken again so that its buffer stays live
    (untouched, as MPI requires of a non-blocking collective's send
    buffer) until then. Only this op may read `posted`. The ops between the
    post and the wait overlap the collective (weft-overlap-collectives).
    ```mlir
    %p = shard.all_reduce %x on @mesh grid_axes = [2] : tensor<8x64xf32> -> tensor<8x64xf32>
    %dw = weft.matmul ...                      // runs while %x is summed
    %y = weft.wait_collective %p, %x : tensor<8x64xf32> -> tensor<8x64xf32>
    ```
    Cost: none (the collective's cost is the post's).
  }];
  let arguments = (ins Weft_Tensor:$posted, Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$value);
  let assemblyFormat = "$posted `,` $input attr-dict `:` type($input) `->` "
                       "type($value)";
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTPARALLELOPS_TD
