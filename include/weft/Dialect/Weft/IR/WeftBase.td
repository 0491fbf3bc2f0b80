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
  // The device mesh and the collectives are upstream shard ops.
  let dependentDialects = ["mlir::shard::ShardDialect"];
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

/// Every weft value: a ranked tensor with a static shape, any element type
/// (f32/f64/f16/bf16, signless integers, i1 for ONNX bool).
def Weft_Tensor : StaticShapeTensorOf<[AnyType]>;
def Weft_BoolTensor : StaticShapeTensorOf<[I1]>;
def Weft_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;

/// Base of every weft op. Ops provide their cost through CostOpInterface,
/// whose getFlops by default counts what the op's record
/// (runtime/include/weft/ops/Ops.def) says per element.
/// `costOverrides` names the CostOpInterface methods with a default that the
/// op replaces: CustomFlops for an op whose record's Flops is Custom (it
/// defines getFlops; OpRecords.cpp holds the two together at compile time),
/// "getBytesRead" for ops that read part of an operand.
defvar CustomFlops = ["getFlops"];
class Weft_Op<string mnemonic, list<Trait> traits = [],
              list<string> costOverrides = []>
    : Op<Weft_Dialect, mnemonic,
         !listconcat(traits,
                     [DeclareOpInterfaceMethods<CostOpInterface, costOverrides>,
                      KernelContract])>;

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
    : Weft_InferredOp<mnemonic, traits, costOverrides> {
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &types) {
      return ::weft::inferKernelTypes<$cppClass>(ctx, loc, adaptor, types);
    }
  }];
}

/// Elementwise unary op: the result has the operand's type. Costs `flops`
/// FLOPs per element.
class Weft_UnaryOp<string mnemonic, string onnxName, list<Trait> traits = []>
    : Weft_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
              DeclareOpInterfaceMethods<GradientOpInterface>])> {
  let summary = "Elementwise `" # onnxName # "` (ONNX " # onnxName # "-13).";
  let description = "Elementwise `" # onnxName # "`. Cost: 1 FLOP per element.";
  let arguments = (ins Weft_Tensor:$input);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($output)";
}

/// Elementwise binary op with ONNX (numpy) multidirectional broadcasting;
/// its result type is its kernel's rule (equal: bool).
class Weft_BinaryOp<string mnemonic, string onnxName>
    : Weft_KernelTypedOp<mnemonic, [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let summary = "Elementwise `" # onnxName # "` with numpy broadcasting.";
  let description = [{
    Multidirectional (numpy) broadcasting as in the ONNX spec
    ("Broadcasting in ONNX"). Cost: 1 FLOP per result element.
  }];
  let arguments = (ins Weft_Tensor:$lhs, Weft_Tensor:$rhs);
  let results = (outs Weft_Tensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

/// Reduction over a set of axes (ONNX Reduce*-13/-18 with resolved axes).
class Weft_ReduceOp<string mnemonic, string onnxName>
    : Weft_KernelTypedOp<mnemonic, [DeclareOpInterfaceMethods<GradientOpInterface>]> {
  let summary = "`" # onnxName # "` over `axes` (sorted, non-negative).";
  let description = [{
    Reduces `input` over `axes`. With `keepdims` the reduced dimensions stay
    with size 1. An empty `axes` reduces nothing (the importer resolves ONNX's
    "no axes means all axes" rule). Cost: 1 FLOP per input element.
  }];
  let arguments = (ins Weft_Tensor:$input, DenseI64ArrayAttr:$axes,
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
