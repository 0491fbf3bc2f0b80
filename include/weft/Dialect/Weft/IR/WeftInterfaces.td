//===- WeftInterfaces.td - weft op interfaces --------------*- tablegen -*-===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_TD
#define WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_TD

include "mlir/IR/OpBase.td"

def CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    The cost of executing an op once on its static shapes, used by the
    pipeline partitioner and the schedule simulator.

    Units: FLOPs count a multiply-add as 2 (so a `[M,K]x[K,N]` matmul costs
    `2*M*N*K`); elementwise ops cost 1 FLOP per result element, transcendental
    functions included; data movement costs 0 FLOPs. Bytes are whole bytes
    (`i1` takes one byte, sub-byte types round up). By default an op reads
    every operand once and writes every result once; ops that touch less
    (views, gathers, slices) override that.
  }];
  let methods = [
    InterfaceMethod<"Floating-point operations of one execution (FLOPs); "
      "by default the op record's per-element count (Ops.def).",
      "int64_t", "getFlops", (ins), [{}],
      [{ return ::weft::recordFlops($_op); }]>,
    InterfaceMethod<"Bytes read from operands by one execution.",
      "int64_t", "getBytesRead", (ins), [{}],
      [{ return ::weft::detail::defaultBytesRead($_op); }]>,
    InterfaceMethod<"Bytes written to results by one execution.",
      "int64_t", "getBytesWritten", (ins), [{}],
      [{ return ::weft::detail::defaultBytesWritten($_op); }]>,
  ];
}

def SplitLayoutOpInterface : OpInterface<"SplitLayoutOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    How a tensor-parallel split of operand 0 passes through an op that moves
    data without computing (its record's Split class is Layout: transpose,
    reshape, split, slice): the sharding of its results, each rank's shard
    staying its own (Megatron's rule that the ops between a column- and a
    row-parallel linear keep the shard local). Declared by the op, not
    listed in the tensor-parallel pass; OpRecordTest holds the interface
    and the Layout class together.
  }];
  let methods = [
    InterfaceMethod<[{
        The sharding of every result when operand 0 is `operand` (split)
        over `parts` ranks; nullopt, with the reason in `why`, when the op
        would mix the ranks' shards.
      }],
      "std::optional<::weft::Sharding>", "splitResults",
      (ins "::weft::Sharding":$operand, "int64_t":$parts,
           "std::string &":$why)>,
  ];
}

/// See WeftInterfaces.h: a kernel op's result types are its kernel's.
def KernelContract : NativeOpTrait<"KernelContract"> {
  let cppNamespace = "::weft";
}

/// See WeftInterfaces.h: an op whose result types are inferred by its
/// kernel's rule (Weft_KernelTypedOp), so that inferring them is the check.
def KernelTypedResults : NativeOpTrait<"KernelTypedResults"> {
  let cppNamespace = "::weft";
}

def GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::weft";
  let description = [{
    The op's reverse-mode derivative, used by `weft-autodiff`. Given the
    gradient of the loss with respect to each result (null: that result does
    not reach the loss, i.e. a zero gradient), `buildGradients` emits ops at
    the builder's insertion point computing the gradient with respect to each
    operand, and returns it in `operandGrads` (one entry per operand; null
    for operands with no gradient: integers, masks, shapes). Gradients have
    the operand's type; broadcasting is undone by summing (numpy semantics).
  }];
  let methods = [
    InterfaceMethod<"Builds the operand gradients from the result gradients.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTINTERFACES_TD
