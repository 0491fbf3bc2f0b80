//===- GraphImporter.cpp - ONNX graph -> weft ops -------------------------===//

#include "GraphImporter.h"

#include "weft/Dialect/Weft/IR/ConstantEvaluator.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;
using namespace weft;

const ConverterMap &weft::converters() {
  static const ConverterMap map = [] {
    ConverterMap m;
    registerConstantConverters(m);
    registerElementwiseConverters(m);
    registerMovementConverters(m);
    registerNNConverters(m);
    registerControlFlowConverters(m);
    registerTransformerConverters(m);
    return m;
  }();
  return map;
}

GraphImporter::GraphImporter(MLIRContext *ctx, const onnx::ModelProto &model,
                             const ImportOptions &options, StringRef sourceName)
    : ctx(ctx), model(model), options(options), sourceName(sourceName.str()),
      modelDir(llvm::sys::path::parent_path(sourceName).str()), b(ctx),
      unknownLoc(FileLineColLoc::get(ctx, sourceName, 0, 0)) {}

//===----------------------------------------------------------------------===//
// Diagnostics (the attribute readers: NodeAttributes.cpp)
//===----------------------------------------------------------------------===//

std::string weft::nodeName(const Node &node) {
  if (!node.name().empty())
    return node.name();
  // Unnamed nodes are identified by their first output, unique in a graph.
  return node.output_size() ? node.op_type() + "(" + node.output(0) + ")"
                            : node.op_type();
}

Location GraphImporter::loc(const Node &node) {
  // loc("<node>"("<OpType>"("<model>":0:0))): diagnostics print the model
  // file; passes and IR dumps keep the node name and op type.
  return NameLoc::get(
      StringAttr::get(ctx, nodeName(node)),
      NameLoc::get(StringAttr::get(ctx, node.op_type()), unknownLoc));
}

InFlightDiagnostic GraphImporter::error(const Node &node) {
  return emitError(loc(node))
         << node.op_type() << " node '" << nodeName(node) << "': ";
}

InFlightDiagnostic &GraphImporter::explainFixedBatch(InFlightDiagnostic &diag,
                                                     const Node &node,
                                                     ArrayRef<int64_t> dims) {
  return weft::explainFixedBatch(diag, node, dims, globalBatch, options);
}

InFlightDiagnostic &weft::explainFixedBatch(InFlightDiagnostic &diag,
                                            const Node &node,
                                            ArrayRef<int64_t> dims,
                                            int64_t batch,
                                            const ImportOptions &options) {
  if (batch <= 1)
    return diag;
  const int64_t *fixed = llvm::find_if(
      dims, [&](int64_t d) { return d >= batch && d % batch == 0; });
  if (fixed == dims.end())
    return diag;
  diag << "\n  the graph fixes the batch at " << batch << ": this "
       << node.op_type() << "'s constant [";
  llvm::interleave(dims, diag, "x");
  diag << "] holds " << *fixed;
  if (*fixed != batch)
    diag << " = " << batch << "x" << *fixed / batch;
  diag << "\n  " << options.batchSplitFlags() << " needs micro-batches of "
       << batch / options.batchSplit() << "\n  fix: " << kDynamicBatchFix;
  return diag;
}

//===----------------------------------------------------------------------===//
// Values and constants
//===----------------------------------------------------------------------===//

bool GraphImporter::has(const Node &node, int i) const {
  return i < node.input_size() && !node.input(i).empty();
}

Value GraphImporter::addArgument(const std::string &name, Type type,
                                 StringRef kind) {
  Block &entry = func.getBody().front();
  Value arg = entry.addArgument(type, unknownLoc);
  argKinds.push_back({kind.str(), name});
  values[name] = arg;
  return arg;
}

Value GraphImporter::materialize(const std::string &name,
                                 const HostTensor &value) {
  OpBuilder::InsertionGuard guard(b);
  auto it = constantLocs.find(name);
  Location at = it != constantLocs.end() ? Location(it->second) : unknownLoc;
  Value v = ConstantOp::create(b, at, toElementsAttr(value, ctx));
  values[name] = v;
  return v;
}

Value GraphImporter::constantOf(const Node &node, const HostTensor &value) {
  return ConstantOp::create(b, loc(node), toElementsAttr(value, ctx));
}

Value GraphImporter::scalarOf(const Node &node, Type elementType, double v) {
  auto type = RankedTensorType::get({}, elementType);
  TypedAttr value = isa<FloatType>(elementType)
                        ? TypedAttr(b.getFloatAttr(elementType, v))
                        : b.getIntegerAttr(elementType, int64_t(v));
  return ConstantOp::create(b, loc(node), DenseElementsAttr::get(type, value));
}

std::optional<HostTensor> GraphImporter::constantValue(Value value) {
  if (auto constant = value.getDefiningOp<ConstantOp>()) {
    if (auto attr = dyn_cast<DenseElementsAttr>(constant.getValueAttr()))
      return fromElementsAttr(attr);
    return std::nullopt;
  }
  std::string refusal;
  return fold(value, &refusal);
}

std::optional<int64_t> GraphImporter::paddingRow(const Node &node, int i) {
  if (!has(node, i))
    return std::nullopt;
  auto it = options.paddingRows.find(node.input(i));
  if (it == options.paddingRows.end())
    return std::nullopt;
  appliedPaddingRows.insert(it->first);
  return it->second;
}

Value GraphImporter::foldedOrSelf(const Node &node, Value value) {
  if (!value || value.getDefiningOp<ConstantOp>())
    return value;
  std::optional<HostTensor> known = constantValue(value);
  return known ? constantOf(node, *known) : value;
}

Value GraphImporter::nonTrainableOperand(const Node &node, int i,
                                         StringRef what) {
  const onnx::TensorProto *init = initializers.lookup(node.input(i));
  if (init && isFloatDtype(init->data_type()) && !values.count(node.input(i)) &&
      !requireConstant(node, i, what))
    return {};
  Value v = operand(node, i);
  if (!v)
    return {};
  SmallVector<Value> work = {v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Value next = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(next)) {
      const auto &[kind, name] = argKinds[arg.getArgNumber()];
      if (kind == kParamAttr) {
        error(node) << "the " << what << " operand depends on parameter '"
                    << name << "', which weft's op takes no gradient for; "
                    << "freeze it with --frozen " << name;
        return {};
      }
    } else if (seen.insert(next.getDefiningOp()).second) {
      llvm::append_range(work, next.getDefiningOp()->getOperands());
    }
  }
  return v;
}

Value GraphImporter::lookup(const std::string &name, const Node *user) {
  if (Value v = values.lookup(name))
    return v;
  auto c = constants.find(name);
  if (c != constants.end())
    return materialize(name, c->second);
  if (const onnx::TensorProto *init = initializers.lookup(name)) {
    if (isFloatDtype(init->data_type())) {
      // A weight: described by shape and dtype; its bytes are never read.
      Type element = toMLIRElementType(init->data_type(), ctx);
      auto type = RankedTensorType::get(
          SmallVector<int64_t>(init->dims().begin(), init->dims().end()),
          element);
      // Frozen initializers are state that nothing updates: loaded, read,
      // saved back unchanged, never differentiated.
      bool state =
          stateInitializers.contains(name) || frozenInitializers.contains(name);
      return addArgument(name, type, state ? kStateAttr : kParamAttr);
    }
    HostTensor t;
    std::string why;
    if (!readTensorProto(*init, t, why, modelDir)) {
      auto diag = user ? error(*user) : emitError(unknownLoc);
      diag << "cannot read initializer '" << name << "': " << why;
      return {};
    }
    return materialize(name, constants[name] = std::move(t));
  }
  auto diag = user ? error(*user) : emitError(unknownLoc);
  diag << "'" << name << "' is not a graph input, initializer or node output";
  return {};
}

Value GraphImporter::operand(const Node &node, int i) {
  if (!has(node, i)) {
    error(node) << "required input " << i << " is missing";
    return {};
  }
  return lookup(node.input(i), &node);
}

Value GraphImporter::optionalOperand(const Node &node, int i) {
  return has(node, i) ? lookup(node.input(i), &node) : Value();
}

RankedTensorType GraphImporter::type(const Node &node, int i) {
  if (!has(node, i))
    return {};
  const std::string &name = node.input(i);
  if (Value v = values.lookup(name))
    return cast<RankedTensorType>(v.getType());
  if (const HostTensor *c = constant(node, i))
    return RankedTensorType::get(c->shape, toMLIRElementType(c->dtype, ctx));
  if (const onnx::TensorProto *init = initializers.lookup(name))
    return RankedTensorType::get(
        SmallVector<int64_t>(init->dims().begin(), init->dims().end()),
        toMLIRElementType(init->data_type(), ctx));
  if (Value v = lookup(name, &node))
    return cast<RankedTensorType>(v.getType());
  return {};
}

const HostTensor *GraphImporter::constant(const Node &node, int i) {
  if (!has(node, i))
    return nullptr;
  const std::string &name = node.input(i);
  auto it = constants.find(name);
  if (it != constants.end())
    return &it->second;
  // Integer and bool initializers are constants (shapes, indices, masks);
  // float initializers are weights unless a converter requires a constant.
  const onnx::TensorProto *init = initializers.lookup(name);
  if (!init || isFloatDtype(init->data_type()) || values.count(name))
    return nullptr;
  HostTensor t;
  std::string why;
  if (!readTensorProto(*init, t, why, modelDir))
    return nullptr;
  return &(constants[name] = std::move(t));
}

const HostTensor *GraphImporter::requireConstant(const Node &node, int i,
                                                 StringRef what) {
  if (const HostTensor *c = constant(node, i))
    return c;
  const std::string &name = node.input(i);
  if (const onnx::TensorProto *init = initializers.lookup(name)) {
    HostTensor t;
    std::string why;
    if (readTensorProto(*init, t, why, modelDir))
      return &(constants[name] = std::move(t));
    error(node) << "initializer '" << name << "' (" << what
                << ") must be read at compile time, but " << why;
    return nullptr;
  }
  if (graphInputs.contains(name)) {
    error(node) << "input '" << name << "' feeds the " << what
                << " operand, which must be a compile-time constant; bind it "
                   "with --freeze-input "
                << name << "=FILE.pb";
    return nullptr;
  }
  InFlightDiagnostic diag = error(node)
                            << "the " << what << " operand '" << name
                            << "' is computed from runtime values; weft "
                               "needs it at compile time";
  // Name the graph inputs it is computed from: binding them makes it known.
  SmallVector<std::string> feeding;
  SmallVector<Value> work;
  llvm::SmallPtrSet<Operation *, 16> seen;
  if (Value v = values.lookup(name))
    work.push_back(v);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      const auto &[kind, argName] = argKinds[arg.getArgNumber()];
      if (kind == kInputAttr && !llvm::is_contained(feeding, argName))
        feeding.push_back(argName);
    } else if (seen.insert(v.getDefiningOp()).second) {
      llvm::append_range(work, v.getDefiningOp()->getOperands());
    }
  }
  for (const std::string &in : feeding)
    diag << "\n  input '" << in << "' feeds it: bind it with --freeze-input "
         << in << "=FILE.pb";
  return nullptr;
}

bool GraphImporter::used(const Node &node, int i) const {
  return i < node.output_size() && !node.output(i).empty() &&
         liveNames.contains(node.output(i));
}

void GraphImporter::bind(const Node &node, int i, Value value) {
  if (i >= node.output_size() || node.output(i).empty())
    return;
  std::string refusal;
  if (std::optional<HostTensor> folded = fold(value, &refusal)) {
    bind(node, i, std::move(*folded));
    return;
  }
  if (!refusal.empty()) {
    error(node) << refusal;
    bindFailed = true;
    return;
  }
  values[node.output(i)] = value;
  if (failed(checkAgainstONNX(node, i, value)))
    bindFailed = true;
}

std::optional<HostTensor> GraphImporter::fold(Value value,
                                              std::string *refusal) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return std::nullopt;
  Operation *op = result.getOwner();
  auto it = folded.find(op);
  if (it == folded.end()) {
    // The one evaluator: the op's CPU kernel on its operands' values, each
    // a constant or an op that folds (converters chain ops: n-ary Max).
    SmallVector<DenseElementsAttr> operands;
    for (Value operand : op->getOperands()) {
      if (auto constant = operand.getDefiningOp<ConstantOp>()) {
        if (auto attr = dyn_cast<DenseElementsAttr>(constant.getValueAttr()))
          operands.push_back(attr);
      } else if (std::optional<HostTensor> t = fold(operand, refusal)) {
        operands.push_back(toElementsAttr(*t, ctx));
      }
    }
    std::optional<SmallVector<DenseElementsAttr>> attrs;
    if (operands.size() == op->getNumOperands())
      attrs = evaluateConstantOp(op, operands, kMaxFoldElements, refusal);
    SmallVector<HostTensor> results;
    if (attrs)
      for (DenseElementsAttr attr : *attrs)
        if (std::optional<HostTensor> t = fromElementsAttr(attr))
          results.push_back(std::move(*t));
    if (results.size() != op->getNumResults())
      results.clear();
    it = folded.insert({op, std::move(results)}).first;
  }
  if (it->second.empty())
    return std::nullopt;
  return it->second[result.getResultNumber()];
}

void GraphImporter::eraseFolded() {
  // Folded ops and the constants materialised for them, last first, where
  // nothing reads them any more.
  SmallVector<Operation *> dead;
  for (auto &[op, results] : folded)
    if (!results.empty())
      dead.push_back(op);
  llvm::sort(dead,
             [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  for (Operation *op : dead) {
    if (!op->use_empty())
      continue;
    SmallVector<Operation *> operands;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        operands.push_back(def);
    op->erase();
    for (Operation *def : operands)
      if (def->use_empty() && isa<ConstantOp>(def))
        def->erase();
  }
  folded.clear();
}

LogicalResult GraphImporter::bindResults(const Node &node, Operation *op) {
  if (!op)
    return failure();
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    bind(node, i, result);
  return success();
}

void GraphImporter::bind(const Node &node, int i, HostTensor value) {
  if (i >= node.output_size() || node.output(i).empty())
    return;
  constantLocs.insert({node.output(i), loc(node)});
  constants[node.output(i)] = std::move(value);
}

/// Cross-checks weft's inferred type against ONNX shape inference where ONNX
/// knows a static shape: a disagreement is a bug in one of the two rules, and
/// is reported rather than silently trusted.
LogicalResult GraphImporter::checkAgainstONNX(const Node &node, int i,
                                              Value value) {
  const onnx::TypeProto *onnxType = onnxTypes.lookup(node.output(i));
  if (!onnxType || !onnxType->has_tensor_type())
    return success();
  const auto &tensorType = onnxType->tensor_type();
  auto type = cast<RankedTensorType>(value.getType());
  Type element = toMLIRElementType(tensorType.elem_type(), ctx);
  bool mismatch = element && element != type.getElementType();
  if (tensorType.has_shape()) {
    const auto &dims = tensorType.shape().dim();
    if (dims.size() != type.getRank()) {
      mismatch = true;
    } else {
      for (int d = 0; d < dims.size(); ++d)
        if (dims[d].has_dim_value() &&
            dims[d].dim_value() != type.getDimSize(d))
          mismatch = true;
    }
  }
  if (!mismatch)
    return success();
  std::string onnxText;
  llvm::raw_string_ostream os(onnxText);
  os << "[";
  if (tensorType.has_shape())
    for (int d = 0; d < tensorType.shape().dim_size(); ++d) {
      const auto &dim = tensorType.shape().dim(d);
      os << (d ? "x" : "")
         << (dim.has_dim_value() ? std::to_string(dim.dim_value()) : "?");
    }
  os << "] elem_type " << tensorType.elem_type();
  return error(node) << "output '" << node.output(i) << "': weft infers "
                     << type << " but ONNX shape inference gives " << onnxText;
}

//===----------------------------------------------------------------------===//
// Graph conversion
//===----------------------------------------------------------------------===//

void GraphImporter::classifyInitializers() {
  // Batch-norm running statistics are state, not parameters: torch's
  // parameters() excludes them, and the optimizer must not update them.
  llvm::StringMap<bool> onlyStatistics;
  for (const Node &node : model.graph().node())
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string &name = node.input(i);
      if (!initializers.count(name))
        continue;
      bool statistic =
          node.op_type() == "BatchNormalization" && (i == 3 || i == 4);
      auto [it, inserted] = onlyStatistics.insert({name, statistic});
      if (!inserted)
        it->second = it->second && statistic;
    }
  for (const auto &entry : onlyStatistics)
    if (entry.second)
      stateInitializers.insert(entry.first());
  for (const std::string &name : options.frozen)
    frozenInitializers.insert(name);
}

FailureOr<RankedTensorType>
GraphImporter::inputType(const onnx::ValueInfoProto &info) {
  const auto &tensorType = info.type().tensor_type();
  Type element = toMLIRElementType(tensorType.elem_type(), ctx);
  if (!info.type().has_tensor_type() || !element)
    return emitError(unknownLoc)
           << "unsupported variant: model input '" << info.name()
           << "' is not a tensor of a supported element type";
  SmallVector<int64_t> shape;
  for (const auto &dim : tensorType.shape().dim())
    shape.push_back(dim.dim_value());
  return RankedTensorType::get(shape, element);
}

void GraphImporter::markReads(const onnx::GraphProto &graph) {
  for (const Node &node : graph.node()) {
    for (const std::string &in : node.input())
      liveNames.insert(in);
    for (const auto &attribute : node.attribute())
      if (attribute.has_g())
        markReads(attribute.g());
  }
}

LogicalResult GraphImporter::convertInline(const onnx::GraphProto &graph) {
  for (const auto &init : graph.initializer())
    initializers[init.name()] = &init;
  for (const auto &info : graph.value_info())
    onnxTypes[info.name()] = &info.type();
  const ConverterMap &table = converters();
  for (const Node &node : graph.node()) {
    Converter convert = table.lookup(node.op_type());
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!convert || !defaultDomain)
      return error(node) << "unsupported ONNX node in the branch taken";
    // A branch's outputs are read through the If: keep every node.
    for (const std::string &out : node.output())
      liveNames.insert(out);
    if (failed(convert(*this, node)) || bindFailed)
      return failure();
  }
  return success();
}

LogicalResult GraphImporter::run(ModuleOp module) {
  const onnx::GraphProto &graph = model.graph();
  for (const auto &init : graph.initializer())
    initializers[init.name()] = &init;
  for (const auto &info : graph.value_info())
    onnxTypes[info.name()] = &info.type();
  for (const auto &info : graph.output())
    onnxTypes[info.name()] = &info.type();
  classifyInitializers();

  // Liveness: a node is converted only if the graph outputs depend on it, so
  // parameters of dead branches never become arguments.
  for (const auto &out : graph.output())
    liveNames.insert(out.name());
  for (int n = graph.node_size() - 1; n >= 0; --n) {
    const Node &node = graph.node(n);
    if (llvm::any_of(node.output(), [&](const std::string &o) {
          return liveNames.contains(o);
        })) {
      for (const std::string &in : node.input())
        liveNames.insert(in);
      // What its branches read from outside them (an If's captures).
      for (const auto &attribute : node.attribute())
        if (attribute.has_g())
          markReads(attribute.g());
    }
  }

  b.setInsertionPointToEnd(module.getBody());
  func = func::FuncOp::create(b, unknownLoc, "main",
                              FunctionType::get(ctx, {}, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);

  for (const auto &info : graph.input()) {
    if (initializers.count(info.name()))
      continue;
    graphInputs.insert(info.name());
    const auto &dims = info.type().tensor_type().shape().dim();
    if (options.batchSplit() > 1 && !globalBatch && dims.size() &&
        dims[0].has_dim_value())
      globalBatch = dims[0].dim_value() * options.batchSplit();
    auto frozen = options.frozenInputs.find(info.name());
    if (frozen != options.frozenInputs.end()) {
      onnx::TensorProto proto;
      std::string why;
      auto buffer = llvm::MemoryBuffer::getFile(frozen->second);
      HostTensor t;
      if (!buffer ||
          !proto.ParseFromArray((*buffer)->getBufferStart(),
                                (*buffer)->getBufferSize()) ||
          !readTensorProto(proto, t, why))
        return emitError(unknownLoc)
               << "--freeze-input " << info.name() << "=" << frozen->second
               << ": cannot read an ONNX TensorProto from the file " << why;
      constants[info.name()] = std::move(t);
      continue;
    }
    FailureOr<RankedTensorType> type = inputType(info);
    if (failed(type))
      return failure();
    addArgument(info.name(), *type, kInputAttr);
  }

  const ConverterMap &table = converters();
  for (const Node &node : graph.node()) {
    if (!llvm::any_of(node.output(), [&](const std::string &o) {
          return liveNames.contains(o);
        }))
      continue;
    Converter convert = table.lookup(node.op_type());
    assert(convert && "unsupported ops are rejected before conversion");
    if (failed(convert(*this, node)) || bindFailed)
      return failure();
  }

  SmallVector<Value> results;
  for (const auto &out : graph.output()) {
    Value v = lookup(out.name(), nullptr);
    if (!v)
      return failure();
    results.push_back(v);
  }
  for (const auto &[table, row] : options.paddingRows)
    if (!appliedPaddingRows.contains(table))
      return emitError(unknownLoc)
             << "metadata " << kPaddingIdxMetadataKey << " gives '" << table
             << "' padding row " << row
             << ", but no Gather reads it as an embedding table (data, axis "
                "0), so weft cannot keep that row's gradient zero";
  func::ReturnOp::create(b, unknownLoc, results);
  eraseFolded();
  func.setType(FunctionType::get(ctx, entry->getArgumentTypes(),
                                 TypeRange(ValueRange(results))));
  for (auto [i, out] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, "weft.output", StringAttr::get(ctx, out.name()));
  for (auto [i, kind] : llvm::enumerate(argKinds)) {
    func.setArgAttr(i, kind.first, StringAttr::get(ctx, kind.second));
    if (frozenInitializers.contains(kind.second))
      func.setArgAttr(i, kFrozenAttr, UnitAttr::get(ctx));
  }
  return success();
}
