//===- ImportONNX.h - ONNX model -> weft IR ---------------------*- C++ -*-===//
//
// Imports an ONNX model (binary protobuf or ONNX text syntax) into a module
// holding one `func.func @main` in the weft dialect.
//
// Pipeline, all through libonnx: parse -> list unsupported operators ->
// checker -> version converter to opset 17 -> fix symbolic input dims
// (--input-shape) -> shape inference (strict, with data propagation) ->
// conversion node by node, folding shape computations to constants.
//
// Weight bytes are never read: float initializers become function arguments
// (`weft.param`, or `weft.state` for batch-norm running statistics) described
// by their shape and dtype only, so models whose external data files are
// missing import as well. Integer/bool initializers and Constant nodes are
// constants and are read.
//
// Errors (unsupported operators, unresolved dims, invalid models, value-
// dependent shapes) are emitted as MLIR diagnostics naming the ONNX node
// (name, op type, opset) or input; the import then returns null.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_IMPORT_ONNX_IMPORTONNX_H
#define WEFT_IMPORT_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <string>
#include <vector>

namespace weft {

/// The ONNX opset (default domain) the importer implements: models of any
/// other opset libonnx knows (1 to 28 with libonnx 1.23) are converted to it
/// with libonnx's version converter, older ones up, newer ones down. 23 is
/// the first with RMSNormalization, RotaryEmbedding and Attention.
inline constexpr int64_t kImportOpset = 23;

struct ImportOptions {
  /// Static shapes for model inputs, replacing symbolic or missing dims
  /// (`--input-shape NAME=DxDx...`).
  std::map<std::string, llvm::SmallVector<int64_t>> inputShapes;
  /// Model inputs bound to constant values read from ONNX TensorProto files
  /// (`--freeze-input NAME=FILE.pb`): for inputs that feed shape operands
  /// (Reshape's shape, Slice's starts, ...), which a static compiler needs.
  std::map<std::string, std::string> frozenInputs;
  /// Import at micro-batch size: dim 0 of every model input (the global
  /// batch) is divided by this; it must divide it exactly.
  int64_t microbatches = 1;
  /// Data-parallel replicas: each imports its contiguous 1/D of the global
  /// batch (split before the micro-batches).
  int64_t dataParallel = 1;
  /// What dim 0 of the global batch is divided by: M x D.
  int64_t batchSplit() const { return microbatches * dataParallel; }
  /// The flags that split the batch, for messages ("--microbatches 4", or
  /// "--microbatches 2 x --data-parallel 2").
  std::string batchSplitFlags() const {
    std::string flags = "--microbatches " + std::to_string(microbatches);
    if (dataParallel > 1)
      flags += " x --data-parallel " + std::to_string(dataParallel);
    return flags;
  }
  /// Float initializers kept constant (`--frozen`): exact names or globs
  /// (`*`, `?`, `[...]`, llvm::GlobPattern). They import as `weft.state` +
  /// `weft.frozen` arguments: no gradient, no optimizer state, saved
  /// unchanged. A pattern that matches no initializer is an error.
  std::vector<std::string> frozen;
  /// Also freeze the initializers the model lists, comma-separated, in its
  /// `weft.frozen` metadata (written by `weft.export` for float buffers).
  bool frozenFromMetadata = true;
  /// Embedding tables' padding rows (torch's nn.Embedding padding_idx),
  /// initializer name -> row, from the model's `weft.padding_idx`
  /// metadata: each Gather on axis 0 of such a table carries
  /// `weft.padding_idx`, and the table gets no gradient from the positions
  /// that look that row up. A name no such Gather reads is an error.
  std::map<std::string, int64_t> paddingRows;
};

/// metadata_props keys `weft.export` writes and the importer reads.
inline constexpr llvm::StringLiteral kFrozenMetadataKey = "weft.frozen";
/// `name=DxD,...`: the example shapes, used for symbolic input dims unless
/// `--input-shape` gives the input's shape.
inline constexpr llvm::StringLiteral kInputShapesMetadataKey =
    "weft.input_shapes";
/// `name=row,...`: embedding tables' padding rows (ImportOptions::paddingRows).
inline constexpr llvm::StringLiteral kPaddingIdxMetadataKey =
    "weft.padding_idx";

/// Imports `buffer` (ONNX text syntax when `isText`, else binary protobuf).
/// `sourceName` names the model in diagnostics and in the module's
/// `weft.source` attribute. Returns null after emitting diagnostics.
mlir::OwningOpRef<mlir::ModuleOp>
importONNX(llvm::StringRef buffer, llvm::StringRef sourceName, bool isText,
           const ImportOptions &options, mlir::MLIRContext *context);

/// True when `path` names ONNX text syntax (`.onnxtxt`).
bool isONNXTextPath(llvm::StringRef path);

/// Parses `NAME=DxDx...` (a scalar is `NAME=`); errors name the flag value.
llvm::LogicalResult
parseInputShape(llvm::StringRef spec,
                std::map<std::string, llvm::SmallVector<int64_t>> &out,
                std::string &error);

/// The ONNX operator types (default domain) the importer converts, sorted.
llvm::SmallVector<llvm::StringRef> supportedONNXOps();

} // namespace weft

#endif // WEFT_IMPORT_ONNX_IMPORTONNX_H
