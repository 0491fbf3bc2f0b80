//===- GraphImporter.h - ONNX graph -> weft ops (internal) ------*- C++ -*-===//
//
// The state of one graph conversion, and the API operator converters use:
// operand values, compile-time constants, attributes and error reporting
// that names the ONNX node.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H
#define WEFT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H

#include "HostTensor.h"

#include "weft/Import/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <onnx/onnx_pb.h>

namespace weft {

/// What to do about a graph exported at a fixed batch that the layout must
/// split (the end of the importer's fixed-batch diagnostics).
inline constexpr llvm::StringLiteral kDynamicBatchFix =
    "export with dynamic_axes={name: {0: \"batch\"}} for every input, or "
    "with weft.export (python3 -m weft.export)";

using Node = onnx::NodeProto;

/// Explains a shape error at `node` caused by a batch the graph fixed at
/// export: when one of `dims` (a constant the node reads) is a multiple of
/// the global batch `batch`, notes on `diag` the batch it fixes, the
/// micro-batch `options`' layout needs and the fix; returns `diag`.
mlir::InFlightDiagnostic &explainFixedBatch(mlir::InFlightDiagnostic &diag,
                                            const Node &node,
                                            llvm::ArrayRef<int64_t> dims,
                                            int64_t batch,
                                            const ImportOptions &options);

/// The global batch of a model whose inputs hold the split (micro-)batch:
/// the first input's dim 0 times the split; 0 when unknown.
int64_t globalBatchOf(const onnx::ModelProto &model,
                      const ImportOptions &options);

/// The Reshape that fixes the batch of a graph exported at a fixed one,
/// given `failing`, the node where libonnx's strict shape inference of the
/// split model failed (where the fixed and the split batch first meet):
/// the nearest Reshape upstream of it whose output, by lenient inference
/// (with data propagation, so targets computed from constants are known),
/// has a dim that is a multiple of the global batch `batch`, as a node of
/// `model`. Null when there is none; `*dims` gets that output shape.
const onnx::NodeProto *fixedBatchReshape(const onnx::ModelProto &model,
                                         llvm::StringRef failing, int64_t batch,
                                         llvm::SmallVectorImpl<int64_t> *dims);

class GraphImporter;

/// How diagnostics name a node: its name, or "<OpType>(<first output>)"
/// for an unnamed one (outputs are unique in a graph).
std::string nodeName(const Node &node);

/// Converts one ONNX node: binds every used output with `bind`, or emits an
/// error through `GraphImporter::error` and fails.
using Converter = llvm::LogicalResult (*)(GraphImporter &, const Node &);
using ConverterMap = llvm::StringMap<Converter>;

void registerConstantConverters(ConverterMap &map);
void registerElementwiseConverters(ConverterMap &map);
void registerMovementConverters(ConverterMap &map);
void registerNNConverters(ConverterMap &map);
void registerControlFlowConverters(ConverterMap &map);
void registerTransformerConverters(ConverterMap &map);
const ConverterMap &converters();

class GraphImporter {
public:
  GraphImporter(mlir::MLIRContext *ctx, const onnx::ModelProto &model,
                const ImportOptions &options, llvm::StringRef sourceName);

  /// Builds `func.func @main` into `module`.
  llvm::LogicalResult run(mlir::ModuleOp module);

  //===--- API for converters ---------------------------------------------===//

  /// Explains a shape error at `node` caused by a batch the graph fixed at
  /// export: when one of `dims` (a constant the node reads) is a multiple of
  /// the global batch, notes it on `diag` with the fix; returns `diag`.
  mlir::InFlightDiagnostic &explainFixedBatch(mlir::InFlightDiagnostic &diag,
                                              const Node &node,
                                              llvm::ArrayRef<int64_t> dims);

  mlir::OpBuilder &builder() { return b; }
  mlir::MLIRContext *context() { return ctx; }
  /// Location naming the node: `loc("<name>"("<OpType>"))`.
  mlir::Location loc(const Node &node);
  /// An error at the node's location, prefixed with "<OpType> node '<name>': ".
  mlir::InFlightDiagnostic error(const Node &node);

  /// True when input `i` is present (ONNX marks skipped optionals with "").
  bool has(const Node &node, int i) const;
  /// The value of input `i`, materialising constants; null after an error.
  mlir::Value operand(const Node &node, int i);
  /// The value of input `i` or null when absent (optional inputs).
  mlir::Value optionalOperand(const Node &node, int i);
  /// The type of input `i`, without materialising it.
  mlir::RankedTensorType type(const Node &node, int i);
  /// Input `i`'s value when it is a compile-time constant, else null.
  const HostTensor *constant(const Node &node, int i);
  /// Input `i` as a compile-time constant; errors (naming `what`) otherwise.
  const HostTensor *requireConstant(const Node &node, int i,
                                    llvm::StringRef what);

  /// Converts the nodes of `graph`, a branch of a node whose condition is
  /// known at compile time, into the current scope: its values join the
  /// outer ones (ONNX names are unique across subgraphs) and it may read
  /// outer values. An operator weft lacks is an error at its node.
  llvm::LogicalResult convertInline(const onnx::GraphProto &graph);

  /// True when output `i` exists and something reads it.
  bool used(const Node &node, int i) const;
  void bind(const Node &node, int i, mlir::Value value);
  /// Binds result i of `op` to output i; fails when `op` is null.
  llvm::LogicalResult bindResults(const Node &node, mlir::Operation *op);

  /// Creates `OpT` at the node's location with its result types inferred.
  /// Unlike OpT::create, an operand/attribute combination the op rejects is
  /// reported at the node (null is returned) instead of aborting.
  template <typename OpT, typename... Args>
  mlir::Operation *build(const Node &node, Args &&...args) {
    mlir::OperationState state(loc(node), OpT::getOperationName());
    OpT::build(b, state, mlir::TypeRange(), std::forward<Args>(args)...);
    llvm::SmallVector<mlir::Type> types;
    if (failed(OpT::inferReturnTypes(ctx, state.location, state.operands,
                                     state.attributes.getDictionary(ctx),
                                     state.getRawProperties(), state.regions,
                                     types)))
      return nullptr;
    state.addTypes(types);
    return b.create(state);
  }
  void bind(const Node &node, int i, HostTensor value);

  /// `build<OpT>`'s first result; null when an operand is null (an earlier
  /// step failed and reported) or the op refuses. Lets a converter that
  /// decomposes an operator chain steps and check once at the end.
  template <typename OpT, typename... Args>
  mlir::Value make(const Node &node, Args &&...args) {
    auto present = [](const auto &arg) {
      if constexpr (std::is_convertible_v<decltype(arg), mlir::Value>)
        return static_cast<bool>(mlir::Value(arg));
      else
        return true;
    };
    if (!(present(args) && ...))
      return {};
    mlir::Operation *op = build<OpT>(node, std::forward<Args>(args)...);
    return op ? op->getResult(0) : mlir::Value();
  }
  /// A constant holding `value`, at the node's location.
  mlir::Value constantOf(const Node &node, const HostTensor &value);
  /// A rank-0 constant of `elementType` (float or integer) holding `v`.
  mlir::Value scalarOf(const Node &node, mlir::Type elementType, double v);
  /// `value` when it is a constant or the ops computing it fold to one,
  /// else nullopt.
  std::optional<HostTensor> constantValue(mlir::Value value);
  /// `value` as a constant op when it folds, else `value`: what a
  /// converter's intermediate needs for later passes to see it constant
  /// (bound outputs are replaced so already).
  mlir::Value foldedOrSelf(const Node &node, mlir::Value value);
  /// The padding row (ImportOptions::paddingRows) of the table input `i`
  /// names, recorded as applied; nullopt when it has none.
  std::optional<int64_t> paddingRow(const Node &node, int i);
  /// Input `i` of an operand weft's op takes no gradient for (rotary
  /// tables, attention masks): a float initializer there is read as a
  /// constant rather than trained, and a value a parameter reaches is an
  /// error naming `what` and the parameter. Null after an error.
  mlir::Value nonTrainableOperand(const Node &node, int i,
                                  llvm::StringRef what);

  // Attributes. Without `dflt`: the node's, else the ONNX operator's default
  // as its schema at the model's opset states it (onnx::OpSchemaRegistry,
  // the "Attributes" section of the operator's spec), so the importer never
  // restates an ONNX default. With `dflt`: for an attribute ONNX gives no
  // default (required ones, which the checker enforces; Shape's `end`).
  int64_t attrInt(const Node &node, llvm::StringRef name);
  double attrFloat(const Node &node, llvm::StringRef name);
  std::string attrString(const Node &node, llvm::StringRef name);
  int64_t attrInt(const Node &node, llvm::StringRef name, int64_t dflt);
  double attrFloat(const Node &node, llvm::StringRef name, double dflt);
  std::string attrString(const Node &node, llvm::StringRef name,
                         llvm::StringRef dflt);
  llvm::SmallVector<int64_t> attrInts(const Node &node, llvm::StringRef name);
  const onnx::AttributeProto *attr(const Node &node, llvm::StringRef name);
  /// The node's attribute `name`, else its operator's schema default; a
  /// weft bug (fatal, naming both) when the schema has none.
  const onnx::AttributeProto &attrOrDefault(const Node &node,
                                            llvm::StringRef name);

  /// Axes from input 1 (opset 13: Squeeze, Unsqueeze, ReduceSum) or the
  /// `axes` attribute (ReduceMean/ReduceMax-13), normalised against `rank`
  /// and sorted; repeated axes are an error. Absent axes give an empty list.
  /// Axes from input `index` (Pad-18's), normalised against `rank`, in the
  /// order given; repeated axes are an error.
  llvm::FailureOr<llvm::SmallVector<int64_t>>
  axesInput(const Node &node, int index, int64_t rank);
  llvm::FailureOr<llvm::SmallVector<int64_t>> axes(const Node &node,
                                                   int64_t rank);

  /// True for models torch.onnx exported: their BatchNormalization updates
  /// the running variance with the unbiased batch variance, as torch does.
  bool producedByPyTorch() const { return model.producer_name() == "pytorch"; }

  /// Normalises a possibly negative axis against `rank`; errors when out of
  /// range.
  llvm::FailureOr<int64_t> normalizeAxis(const Node &node, int64_t axis,
                                         int64_t rank);

private:
  mlir::Value lookup(const std::string &name, const Node *user);
  mlir::Value materialize(const std::string &name, const HostTensor &value);
  mlir::Value addArgument(const std::string &name, mlir::Type type,
                          llvm::StringRef kind);
  llvm::FailureOr<mlir::RankedTensorType>
  inputType(const onnx::ValueInfoProto &info);
  llvm::LogicalResult checkAgainstONNX(const Node &node, int i,
                                       mlir::Value value);
  void classifyInitializers();

  mlir::MLIRContext *ctx;
  const onnx::ModelProto &model;
  const ImportOptions &options;
  std::string sourceName;
  std::string modelDir; ///< where external data locations are relative to
  mlir::OpBuilder b;
  mlir::func::FuncOp func;
  mlir::Location unknownLoc;

  llvm::StringMap<mlir::Value> values;   ///< converted SSA values
  llvm::StringMap<HostTensor> constants; ///< compile-time constants
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringMap<const onnx::TypeProto *> onnxTypes; ///< value_info/outputs
  llvm::StringMap<mlir::LocationAttr> constantLocs;   ///< where each was folded
  llvm::StringSet<> liveNames;          ///< names the graph outputs depend on
  llvm::StringSet<> graphInputs;        ///< non-initializer graph inputs
  llvm::StringSet<> stateInitializers;  ///< batch-norm running statistics
  llvm::StringSet<> frozenInitializers; ///< constant float initializers
  /// (weft.input | weft.param | weft.state, name) of each function argument.
  std::vector<std::pair<std::string, std::string>> argKinds;
  bool bindFailed = false;
  llvm::StringSet<> appliedPaddingRows; ///< tables a Gather marked
  /// Marks every value `graph`'s nodes read (nested graphs too) live.
  void markReads(const onnx::GraphProto &graph);
  /// Each op the importer built, once evaluated: its results' values when
  /// every operand was a constant and its CPU kernel ran, else empty.
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<HostTensor>> folded;
  /// `value` as a constant when the op defining it folds; nullopt, with the
  /// kernel's message in `*refusal`, when its kernel refuses the values.
  std::optional<HostTensor> fold(mlir::Value value, std::string *refusal);
  /// Erases the folded ops nothing reads.
  void eraseFolded();
  /// The global batch when --microbatches M > 1 splits it: dim 0 of the
  /// graph inputs (already divided) times M; else 0.
  int64_t globalBatch = 0;
};

} // namespace weft

#endif // WEFT_LIB_IMPORT_ONNX_GRAPHIMPORTER_H
