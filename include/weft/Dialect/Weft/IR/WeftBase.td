//===- WeftBase.td - weft dialect definition and op base classes -*- tablegen -*-===//
//
// The weft dialect holds a training graph at ONNX granularity. Every tensor is
// ranked and statically shaped: the planner needs exact byte counts.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTBASE_TD
#define WEFT_DIALECT_WEFT_IR_WEFTBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "weft/Dialect/Weft/IR/WeftInterfaces.td"

def Weft_Dialect : Dialect {
  let name = "weft";
  let cppNamespace = "::weft";
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // An op's weft.task and a pipelined function's stages: Task.h.
  let hasOperationAttrVerify = 1;
  // The device mesh and the collectives are upstream shard ops.
  let dependentDialects = ["mlir::shard::ShardDialect"];
  let extraClassDeclaration = [{
    /// The kernel rules this context has applied (KernelRuleCache.h).
    ::weft::KernelRuleCache &kernelRules() { return *rules; }

  private:
    std::unique_ptr<::weft::KernelRuleCache> rules;

  public:
  }];
  let summary = "Compute ops of a statically shaped training graph, at ONNX granularity.";
  let description = [{
    The `weft` dialect is the IR of the weft distributed-training compiler. A
    model is a `func.func` whose arguments are the model inputs
    (`{weft.input = "<name>"}`), its trainable parameters
    (`{weft.param = "<initializer name>"}`) and non-trainable state such as
    batch-norm running statistics (`{weft.state = "<initializer name>"}`); its
    results are the graph outputs (for training: one scalar loss).

    Compute ops mirror the ONNX operators they come from (ONNX opset 17
    semantics, https://onnx.ai/onnx/operators/) with the value-dependent
    operands of ONNX (shapes, axes, pads, scales) resolved at import into
    attributes, so that every result type is inferable from operand types and
    attributes alone. Each op verifies its operands and infers its result type,
    and implements `CostOpInterface` (FLOPs and bytes moved).
  }];
}

def Weft_TaskAttr : AttrDef<Weft_Dialect, "Task"> {
  let mnemonic = "task";
  let summary = "Which task of the training step an op's work belongs to";
  let description = [{
    `#weft.task<K[, micro_batch = i][, stage = s][, chunk = c]>` on an op
    (`weft.task`): its kind K (F forward, B backward, R a forward
    recomputed in the backward, U the optimizer update, W a weight
    gradient split from its backward), the micro-batch
    i (from weft-accumulate-microbatches on; none for U and for sums over
    micro-batches until weft-schedule places them), the pipeline stage s
    (from weft-partition-pipeline on) and the model chunk c of the stage's
    rank (0 until interleaved schedules). An op without one is forward
    work of no micro-batch or stage. Passes ask `weft/Dialect/Weft/IR/Task.h`.
  }];
  let parameters = (ins "::weft::TaskKind":$kind,
                        OptionalParameter<"std::optional<int64_t>">:$microBatch,
                        OptionalParameter<"std::optional<int64_t>">:$stage,
                        DefaultValuedParameter<"int64_t", "0">:$chunk);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

/// A statically shaped tensor whose element type is in one of the plan's
/// dtype sets. `dtypeSet` names it (KernelSpec.h's `dtypes::`): a kernel
/// op's operand types are the dtypes weft-run admits for its inputs
/// (weft-tblgen's WEFT_OP_DTYPES), so the dialect and the runtime check the
/// same sets.
class Weft_TensorOf<list<Type> types, string set>
    : StaticShapeTensorOf<types> {
  string dtypeSet = set;
}

/// Every weft value: a ranked tensor with a static shape, any element type
/// (f32/f64/f16/bf16, signless and unsigned integers, i1 for ONNX bool).
def Weft_Tensor : Weft_TensorOf<[AnyType], "Any">;
def Weft_BoolTensor : Weft_TensorOf<[I1], "Bool">;
/// The floats a plan holds (16-bit ones computed in f32 by the kernels).
def Weft_FloatTensor : Weft_TensorOf<[F32, F64, F16, BF16], "Float">;
def Weft_F32Tensor : Weft_TensorOf<[F32], "F32">;
/// Indices, labels and targets (ONNX tensor(int32), tensor(int64)).
def Weft_IndexTensor : Weft_TensorOf<[I32, I64], "Index">;
/// Floats and integers, no bool.
def Weft_NumericTensor : Weft_TensorOf<[F32, F64, F16, BF16, I8, I16, I32,
                                        I64, UI8, UI16, UI32, UI64],
                                       "Numeric">;

//===----------------------------------------------------------------------===//
// The op record
//
// Every weft op's facts beyond its operands, attributes and results, as
// fields of its definition. weft-tblgen (tools/weft-tblgen) turns them into
// runtime/include/weft/ops/Ops.def, the table the compiler and the MLIR-free
// runtime both read (the build regenerates it; a stale copy is a diff). The
// op's kernel specification entry (runtime/lib/specs), keyed by the same
// `Op` enumerator, holds its shape, dtype and FLOP rule. Each column is a
// TableGen class, so a misspelt value does not parse, and `precision`,
// `split` and `flops` have no default: an op that leaves one unset fails
// the build, naming the op.
//
//   lowering   KernelLowering (default): a compute instruction checked
//              against its spec entry; ViewLowering: no instruction, the
//              result is operand 0's bytes; ConstantLowering: materialised
//              when the plan is loaded; InstructionLowering: a plan
//              instruction of its own (send, receive, wait), not a kernel
//   backends   CpuCudaKernels (default): a CPU and a CUDA kernel;
//              CpuOnlyKernel (the CUDA backend refuses the plan, naming the
//              kernel); NoKernel
//   precision  under --precision bf16/f16 (torch.autocast's op lists):
//              LowPrecision: 16-bit operands (autocast's lower-precision
//              list); FullPrecision: f32 operands (autocast's float32 list);
//              PromotePrecision: the widest float operand's type (type
//              promotion); FollowPrecision: operands as they are
//   split      how a tensor-parallel (Megatron) or sequence-parallel shard
//              passes through the op (lib/Analysis/TensorParallel.cpp,
//              SequenceParallel.cpp): ElementwiseSplit: numpy-broadcast
//              elementwise, shards follow the aligned dims;
//              ElementwiseRandomSplit: elementwise over its input, each
//              shard drawing its part of the whole tensor's mask;
//              HeadsSplit: local to each (batch, head); SoftmaxSplit:
//              normalises over `axis`, which must not be sharded;
//              LayerNormSplit: normalises over [axis, rank), the shard must
//              lie before; LayoutSplit: moves elements (transpose, reshape,
//              split, slice; SplitLayoutOpInterface), the shard moves with
//              them; LinearSplit: Megatron's column/row patterns;
//              VocabSplit: an embedding lookup or a loss over vocab-sharded
//              rows; NoSplit: no rule (a sharded operand is an error, or
//              replicated under --tensor-parallel-fallback=replicate)
//   flops      floating-point operations of one execution (CostOpInterface's
//              units: a multiply-add is 2, an elementwise op 1 per element,
//              data movement 0): PerInput<k> is k per element of operand 0,
//              PerOutput<k> k per element of result 0, NoFlops 0;
//              CustomFlopRule: a rule of the op's shapes and attributes, in
//              its spec entry and its getFlops (CustomFlops below), which
//              plan emission holds equal. The per-element counts are the
//              ops' FLOPs as their descriptions derive them (e.g.
//              layer_norm's 8: mean, centre, square, variance, rsqrt-scale,
//              affine scale and shift)
//
// The gradient column is not written: an op has a gradient rule (weft-
// autodiff) exactly when it declares GradientOpInterface.
//
// A kernel op's plan instruction is its ODS signature: its operands give the
// input counts, its attributes the plan attributes with their kinds, and
// OptionalAttr/DefaultValuedAttr whether the plan may omit one (weft-run
// fills in the default). Three fields say where the plan differs:
//   minInputs, maxInputs  narrow a variadic operand's count (-1: as ODS)
//   compilerAttrs         ODS attributes the plan does not carry
//   planAttrs             attributes plan emission adds (per rank, or
//                         implied by an operand)
// Its operands' Weft_TensorOf constraints are the dtypes weft-run admits
// for each input, and `inPlace` lists the outputs it writes over an input
// (the memory plan aliases them; weft-run's placement check holds them).
//===----------------------------------------------------------------------===//

/// A value of one column of the op record; `value` is its C++ name in
/// weft/ops/OpRecord.h.
class Weft_RecordValue<string v> { string value = v; }

class Weft_Lowering<string v> : Weft_RecordValue<v>;
def KernelLowering : Weft_Lowering<"Kernel">;
def ViewLowering : Weft_Lowering<"View">;
def ConstantLowering : Weft_Lowering<"Constant">;
def InstructionLowering : Weft_Lowering<"Instruction">;

class Weft_Backends<string v> : Weft_RecordValue<v>;
def CpuCudaKernels : Weft_Backends<"CpuCuda">;
def CpuOnlyKernel : Weft_Backends<"CpuOnly">;
def NoKernel : Weft_Backends<"NoKernel">;

class Weft_Precision<string v> : Weft_RecordValue<v>;
def LowPrecision : Weft_Precision<"Low">;
def FullPrecision : Weft_Precision<"Full">;
def PromotePrecision : Weft_Precision<"Promote">;
def FollowPrecision : Weft_Precision<"Follow">;

class Weft_Split<string v> : Weft_RecordValue<v>;
def ElementwiseSplit : Weft_Split<"Elementwise">;
def ElementwiseRandomSplit : Weft_Split<"ElementwiseRandom">;
def HeadsSplit : Weft_Split<"Heads">;
def SoftmaxSplit : Weft_Split<"Softmax">;
def LayerNormSplit : Weft_Split<"LayerNorm">;
def LayoutSplit : Weft_Split<"Layout">;
def LinearSplit : Weft_Split<"Linear">;
def VocabSplit : Weft_Split<"Vocab">;
def NoSplit : Weft_Split<"None">;

/// An attribute of the plan instruction that is not an ODS attribute; `kind`
/// as KernelSpec.h's AttrKind (Int, Float, Bool, String, Ints, Floats).
class Weft_PlanAttr<string attrName, string attrKind, bit isRequired = 0> {
  string name = attrName;
  string kind = attrKind;
  bit required = isRequired;
}

/// What plan emission adds to an op that draws a dropout mask: the mask's
/// stream, and under tensor parallelism the part of the whole tensor's mask
/// this rank's shard draws (KernelSpec: all four shard attributes or none).
defvar Weft_DropoutMaskAttrs = [
  Weft_PlanAttr<"rng_id", "Int">, Weft_PlanAttr<"shard_dim", "Int">,
  Weft_PlanAttr<"shard_blocks", "Int">, Weft_PlanAttr<"shard_count", "Int">,
  Weft_PlanAttr<"shard_index", "Int">];

/// Result `output` written over operand `input`: exactly its bytes
/// (`required`: the kernel reads the state it updates from the output), or,
/// when not required, bytes apart from every input.
class Weft_InPlace<int resultIndex, int operandIndex, bit isRequired = 1> {
  int output = resultIndex;
  int input = operandIndex;
  bit required = isRequired;
}

class Weft_Flops<string v> : Weft_RecordValue<v>;
class PerInput<int k> : Weft_Flops<"PerInput(" # k # ")">;
class PerOutput<int k> : Weft_Flops<"PerOutput(" # k # ")">;
def NoFlops : Weft_Flops<"NoFlops">;
def CustomFlopRule : Weft_Flops<"Custom">;

/// Base of every weft op. Ops provide their cost through CostOpInterface,
/// whose getFlops by default counts what the op's `flops` says per element.
/// `costOverrides` names the CostOpInterface methods with a default that the
/// op replaces: CustomFlops for an op whose `flops` is CustomFlopRule (it
/// defines getFlops; OpRecords.cpp holds the two together at compile time),
/// "getBytesRead" for ops that read part of an operand.
defvar CustomFlops = ["getFlops"];
class Weft_Op<string mnemonic, list<Trait> traits = [],
              list<string> costOverrides = []>
    : Op<Weft_Dialect, mnemonic,
         !listconcat(traits,
                     [DeclareOpInterfaceMethods<CostOpInterface, costOverrides>,
                      KernelContract])> {
  Weft_Lowering lowering = KernelLowering;
  Weft_Backends backends = CpuCudaKernels;
  Weft_Precision precision = ?;
  Weft_Split split = ?;
  Weft_Flops flops = ?;
  int minInputs = -1;
  int maxInputs = -1;
  list<string> compilerAttrs = [];
  list<Weft_PlanAttr> planAttrs = [];
  list<Weft_InPlace> inPlace = [];
}

/// An op with one result whose type is inferred from operands and attributes.
class Weft_InferredOp<string mnemonic, list<Trait> traits = [],
                      list<string> costOverrides = []>
    : Weft_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor]),
              costOverrides>;

/// An op whose result types are its kernel's rule: the runtime's
/// specification entry (runtime/lib/specs) infers them, through
/// KernelContract.h, so the type rule is written once, there.
class Weft_KernelTypedOp<string mnemonic, list<Trait> traits = [],
                         list<string> costOverrides = []>
    : Weft_InferredOp<mnemonic, !listconcat(traits, [KernelTypedResults]),
                      costOverrides> {
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::weft::inferKernelTypes<$cppClass>(ctx, loc, adaptor, types);
    }
  }];
}

/// Elementwise unary op: the result has the operand's type. Costs 1 FLOP
/// per element.
class Weft_UnaryOp<string mnemonic, string onnxName, Weft_Precision prec>
    : Weft_Op<mnemonic, [Pure, SameOperandsAndResultType,
              DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = prec;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Elementwise `" # onnxName # "` (ONNX " # onnxName # "-13).";
  let description = "Elementwise `" # onnxName # "`. Cost: 1 FLOP per element.";
  let arguments = (ins Weft_FloatTensor:$input);
  let results = (outs Weft_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

/// Elementwise binary op with ONNX (numpy) multidirectional broadcasting;
/// its result type is its kernel's rule (equal: bool).
class Weft_BinaryOp<string mnemonic, string onnxName, Weft_Precision prec,
                    Weft_TensorOf operandType = Weft_NumericTensor>
    : Weft_KernelTypedOp<mnemonic, [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = prec;
  let split = ElementwiseSplit;
  let flops = PerOutput<1>;
  let summary = "Elementwise `" # onnxName # "` with numpy broadcasting.";
  let description = [{
    Multidirectional (numpy) broadcasting as in the ONNX spec
    ("Broadcasting in ONNX"). Cost: 1 FLOP per result element.
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

/// Reduction over a set of axes (ONNX Reduce*-13/-18 with resolved axes).
class Weft_ReduceOp<string mnemonic, string onnxName, Weft_Precision prec>
    : Weft_KernelTypedOp<mnemonic, [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let precision = prec;
  let split = NoSplit;
  let flops = PerInput<1>;
  let summary = "`" # onnxName # "` over `axes` (sorted, non-negative).";
  let description = [{
    Reduces `input` over `axes`. With `keepdims` the reduced dimensions stay
    with size 1. An empty `axes` reduces nothing (the importer resolves ONNX's
    "no axes means all axes" rule). Cost: 1 FLOP per input element.
  }];
  let arguments = (ins Weft_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::weft::inferKernelTypes<$cppClass>(ctx, loc, adaptor, types);
    }
    ::llvm::LogicalResult $cppClass::verify() {
      return ::weft::verifyAxes(getOperation(), getAxes(),
                                getInput().getType().getRank());
    }
  }];
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTBASE_TD
