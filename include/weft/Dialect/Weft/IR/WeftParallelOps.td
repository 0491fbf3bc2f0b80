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
    int64_t $cppClass::getFlops() { return 0; }
    int64_t $cppClass::getBytesRead() { return 0; }
    int64_t $cppClass::getBytesWritten() { return 0; }
  }];
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTPARALLELOPS_TD
