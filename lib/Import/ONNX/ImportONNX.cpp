//===- ImportONNX.cpp - ONNX model -> weft IR: the libonnx pipeline -------===//

#include "weft/Import/ONNX/ImportONNX.h"

#include "GraphImporter.h"

#include "weft/Dialect/Weft/IR/WeftDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/Path.h"

#include <climits>

#include <onnx/checker.h>
#include <onnx/common/version.h>
#include <onnx/defs/parser.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

using namespace mlir;
using namespace weft;

bool weft::isONNXTextPath(StringRef path) { return path.ends_with(".onnxtxt"); }

LogicalResult
weft::parseInputShape(StringRef spec,
                      std::map<std::string, SmallVector<int64_t>> &out,
                      std::string &error) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || !spec.contains('=')) {
    error = "--input-shape '" + spec.str() + "': expected NAME=DxDx...";
    return failure();
  }
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  if (!dims.empty())
    dims.split(parts, 'x');
  for (StringRef part : parts) {
    int64_t d;
    if (part.getAsInteger(10, d) || d < 0) {
      error = "--input-shape '" + spec.str() + "': '" + part.str() +
              "' is not a non-negative integer";
      return failure();
    }
    shape.push_back(d);
  }
  out[name.str()] = shape;
  return success();
}

SmallVector<StringRef> weft::supportedONNXOps() {
  SmallVector<StringRef> ops;
  for (const auto &entry : converters())
    ops.push_back(entry.first());
  llvm::sort(ops);
  return ops;
}

namespace {

/// Every tensor of the imported program has dims >= 0 and at most 2^40
/// elements (kMaxElements), so element and byte counts fit int64 wherever
/// they are computed later (memory plan, runtime arena). Fails at the first
/// offending value, naming its ONNX node (the op's location).
LogicalResult checkTensorSizes(ModuleOp module) {
  auto check = [](Value value, Location loc) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type)
      return success();
    if (!checkedElementCount(type.getShape()))
      return emitError(loc) << "a tensor of type " << type
                            << " has a negative dim or more than 2^40 elements";
    return success();
  };
  WalkResult result = module.walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (failed(check(arg, arg.getLoc())))
            return WalkResult::interrupt();
    for (Value v : op->getResults())
      if (failed(check(v, op->getLoc())))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// The newest default-domain opset libonnx defines.
int64_t newestKnownOpset() {
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
      .Map()
      .at(onnx::ONNX_DOMAIN)
      .second;
}

/// The default-domain opset a model imports.
int64_t defaultOpset(const onnx::ModelProto &model) {
  for (const auto &opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return opset.version();
  return -1;
}

/// The opset a model imports for `domain` ("" is the default domain).
int64_t opsetOf(const onnx::ModelProto &model, const std::string &domain) {
  if (domain.empty() || domain == "ai.onnx")
    return defaultOpset(model);
  for (const auto &opset : model.opset_import())
    if (opset.domain() == domain)
      return opset.version();
  return -1;
}

/// Lists every node whose operator weft does not implement, all at once.
LogicalResult checkSupported(const onnx::ModelProto &model, Location loc) {
  const ConverterMap &table = converters();
  SmallVector<const onnx::NodeProto *> unsupported;
  for (const auto &node : model.graph().node()) {
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!defaultDomain || !table.count(node.op_type()))
      unsupported.push_back(&node);
  }
  if (unsupported.empty())
    return success();
  auto diag = emitError(loc)
              << unsupported.size() << " unsupported ONNX node(s):";
  for (const onnx::NodeProto *node : unsupported) {
    diag << "\n  node '" << nodeName(*node) << "' ("
         << (node->domain().empty() ? "" : node->domain() + ".")
         << node->op_type() << ", opset " << opsetOf(model, node->domain())
         << ")";
  }
  return failure();
}

/// Applies --input-shape and rejects any model input left with an unknown dim.
LogicalResult fixInputShapes(onnx::ModelProto &model,
                             const ImportOptions &options, Location loc) {
  onnx::GraphProto *graph = model.mutable_graph();
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph->initializer())
    initializerNames.insert(init.name());
  for (const auto &[name, shape] : options.inputShapes) {
    auto it = llvm::find_if(*graph->mutable_input(),
                            [&](const auto &in) { return in.name() == name; });
    if (it == graph->mutable_input()->end()) {
      auto diag = emitError(loc) << "--input-shape names '" << name
                                 << "', which is not a model input; inputs:";
      for (const auto &in : graph->input())
        if (!initializerNames.contains(in.name()))
          diag << " '" << in.name() << "'";
      return failure();
    }
    auto *tensorShape =
        it->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (tensorShape->dim_size() != (int)shape.size() && tensorShape->dim_size())
      return emitError(loc)
             << "--input-shape " << name << " gives rank " << shape.size()
             << ", the model declares rank " << tensorShape->dim_size();
    tensorShape->clear_dim();
    for (int64_t d : shape)
      tensorShape->add_dim()->set_dim_value(d);
  }
  for (int index = 0; index < graph->input_size(); ++index) {
    const auto &in = graph->input(index);
    if (initializerNames.contains(in.name()) ||
        options.frozenInputs.count(in.name()))
      continue;
    if (!in.type().has_tensor_type())
      return emitError(loc) << "unsupported variant: input '" << in.name()
                            << "' is a sequence, map or optional, not a tensor";
    if (!in.type().tensor_type().has_shape())
      return emitError(loc) << "input '" << in.name()
                            << "' has no shape; give one with --input-shape "
                            << in.name() << "=DxDx...";
    const auto &dims = in.type().tensor_type().shape().dim();
    if (options.batchSplit() > 1 && dims.size() > 0 &&
        dims[0].has_dim_value()) {
      int64_t batch = dims[0].dim_value();
      if (batch % options.batchSplit() != 0)
        return emitError(loc) << options.batchSplitFlags()
                              << " does not divide the batch (dim 0 = " << batch
                              << ") of input '" << in.name() << "'";
      graph->mutable_input(index)
          ->mutable_type()
          ->mutable_tensor_type()
          ->mutable_shape()
          ->mutable_dim(0)
          ->set_dim_value(batch / options.batchSplit());
    }
    for (int d = 0; d < dims.size(); ++d)
      if (!dims[d].has_dim_value())
        return emitError(loc)
               << "input '" << in.name() << "' has unresolved dim " << d
               << (dims[d].has_dim_param() ? " ('" + dims[d].dim_param() + "')"
                                           : std::string())
               << "; weft compiles static shapes: fix it with --input-shape "
               << in.name() << "=DxDx...";
  }
  // Shapes recorded at export (value_info) describe the old input shapes:
  // let shape inference derive them afresh.
  if (!options.inputShapes.empty() || options.batchSplit() > 1)
    graph->clear_value_info();
  return success();
}

/// An error at the model naming `node`, as the importer's own errors do.
InFlightDiagnostic nodeError(Location loc, const onnx::NodeProto &node) {
  return emitError(loc) << node.op_type() << " node '" << nodeName(node)
                        << "': ";
}

/// libonnx's version converter dereferences null on a graph output that
/// nothing defines (found by the import fuzz target).
LogicalResult checkGraphOutputsDefined(const onnx::GraphProto &graph,
                                       Location loc) {
  llvm::StringSet<> defined;
  for (const auto &in : graph.input())
    defined.insert(in.name());
  for (const auto &init : graph.initializer())
    defined.insert(init.name());
  for (const auto &node : graph.node())
    for (const auto &out : node.output())
      defined.insert(out);
  for (const auto &out : graph.output())
    if (!defined.contains(out.name()))
      return emitError(loc) << "graph output '" << out.name()
                            << "' is not a graph input, an initializer or a "
                               "node's output";
  return success();
}

/// libonnx divides by strides and sizes loops by the window attributes'
/// lengths without checking them (its opset-10 Conv and pooling inference
/// divide by a zero stride: import fuzz target).
LogicalResult checkWindowAttributes(const onnx::GraphProto &graph,
                                    Location loc) {
  static const llvm::StringSet<> windowOps = {
      "Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "MaxUnpool"};
  for (const auto &node : graph.node()) {
    if (!windowOps.contains(node.op_type()))
      continue;
    llvm::StringMap<int> sizes;
    for (const auto &attr : node.attribute()) {
      llvm::StringRef name = attr.name();
      bool positive =
          name == "strides" || name == "dilations" || name == "kernel_shape";
      if (!positive && name != "pads")
        continue;
      sizes[name] = attr.ints_size();
      for (int64_t v : attr.ints())
        if (positive ? v <= 0 : v < 0)
          return nodeError(loc, node)
                 << "attribute '" << name << "' holds " << v << "; it must be "
                 << (positive ? "positive" : "non-negative");
    }
    int spatial = -1;
    for (llvm::StringRef name : {"kernel_shape", "strides", "dilations"}) {
      auto it = sizes.find(name);
      if (it == sizes.end())
        continue;
      if (spatial >= 0 && it->second != spatial)
        return nodeError(loc, node)
               << "attribute '" << name << "' has " << it->second
               << " entries, another window attribute " << spatial;
      spatial = it->second;
    }
    auto pads = sizes.find("pads");
    if (pads != sizes.end() && spatial >= 0 && pads->second != 2 * spatial)
      return nodeError(loc, node)
             << "attribute 'pads' has " << pads->second << " entries for "
             << spatial << " spatial dims";
  }
  return success();
}

/// Conv/ConvTranspose without kernel_shape take it from W's dims; libonnx
/// indexes it by X's spatial dims unchecked, so ranks that differ read out
/// of bounds (import fuzz target). Checked where both ranks are declared;
/// the importer checks the rest after inference.
LogicalResult checkConvRanks(const onnx::GraphProto &graph, Location loc) {
  llvm::StringMap<int> ranks;
  for (const auto *list : {&graph.input(), &graph.value_info()})
    for (const auto &info : *list)
      if (info.type().tensor_type().has_shape())
        ranks[info.name()] = info.type().tensor_type().shape().dim_size();
  for (const auto &init : graph.initializer())
    ranks[init.name()] = init.dims_size();
  for (const auto &node : graph.node()) {
    bool conv = node.op_type() == "Conv" || node.op_type() == "ConvTranspose";
    if (!conv || node.input_size() < 2 ||
        llvm::any_of(node.attribute(), [](const onnx::AttributeProto &a) {
          return a.name() == "kernel_shape";
        }))
      continue;
    auto x = ranks.find(node.input(0)), w = ranks.find(node.input(1));
    if (x != ranks.end() && w != ranks.end() && x->second != w->second)
      return nodeError(loc, node)
             << "X '" << node.input(0) << "' has rank " << x->second << ", W '"
             << node.input(1) << "' rank " << w->second
             << "; they must be equal";
  }
  return success();
}

/// libonnx's Slice shape inference narrows `steps` to int, so a step beyond
/// +-(2^31 - 1) on a propagated shape (Slice of Shape) crashes it or loops
/// without bound. A step larger than the dim takes one element either way.
LogicalResult checkSliceSteps(const onnx::GraphProto &graph, Location loc) {
  llvm::StringMap<const onnx::TensorProto *> values;
  for (const auto &init : graph.initializer())
    values[init.name()] = &init;
  for (const auto &node : graph.node())
    if (node.op_type() == "Constant" && node.output_size() == 1)
      for (const auto &attr : node.attribute())
        if (attr.name() == "value" && attr.has_t())
          values[node.output(0)] = &attr.t();
  for (const auto &node : graph.node()) {
    if (node.op_type() != "Slice" || node.input_size() < 5)
      continue;
    const onnx::TensorProto *steps = values.lookup(node.input(4));
    HostTensor value;
    std::string error;
    if (!steps || !readTensorProto(*steps, value, error) || value.isFloat())
      continue; // the importer reports these itself
    for (int64_t step : value.toInts())
      if (step > INT32_MAX || step < -INT32_MAX)
        return nodeError(loc, node)
               << "step " << step
               << " is beyond +-(2^31 - 1), which libonnx's shape "
                  "inference cannot take; a step larger than the dim takes "
                  "one element, so use the dim";
  }
  return success();
}

/// libonnx narrows `axis`/`axes` attributes to int before range-checking
/// them in several inference functions (LayerNormalization's reads the
/// statistics' dims at axis 2^32 - 1 as -1 and crashes: import fuzz
/// target). No rank reaches 2^31, so such an axis is out of range anyway.
LogicalResult checkAxisAttributes(const onnx::GraphProto &graph,
                                  Location loc) {
  for (const auto &node : graph.node())
    for (const auto &attr : node.attribute()) {
      if (attr.name() != "axis" && attr.name() != "axes")
        continue;
      SmallVector<int64_t> values(attr.ints().begin(), attr.ints().end());
      if (attr.has_i())
        values.push_back(attr.i());
      for (int64_t v : values)
        if (v > INT32_MAX || v < -INT32_MAX)
          return nodeError(loc, node)
                 << "attribute '" << attr.name() << "' holds " << v
                 << ", beyond any tensor's rank";
    }
  return success();
}

/// What libonnx mishandles (1.12 and 1.23 alike), refused before it runs.
LogicalResult checkLibonnxHazards(const onnx::ModelProto &model, Location loc) {
  const onnx::GraphProto &graph = model.graph();
  return success(succeeded(checkGraphOutputsDefined(graph, loc)) &&
                 succeeded(checkWindowAttributes(graph, loc)) &&
                 succeeded(checkConvRanks(graph, loc)) &&
                 succeeded(checkAxisAttributes(graph, loc)) &&
                 succeeded(checkSliceSteps(graph, loc)));
}

/// An input that is also an initializer (ONNX IR < 4 style) must agree with it.
LogicalResult checkInitializerInputs(const onnx::ModelProto &model,
                                     Location loc) {
  llvm::StringMap<const onnx::TensorProto *> inits;
  for (const auto &init : model.graph().initializer())
    inits[init.name()] = &init;
  for (const auto &in : model.graph().input()) {
    const onnx::TensorProto *init = inits.lookup(in.name());
    if (!init || !in.type().tensor_type().has_shape())
      continue;
    const auto &dims = in.type().tensor_type().shape().dim();
    bool same = dims.size() == init->dims_size();
    for (int d = 0; same && d < dims.size(); ++d)
      same = !dims[d].has_dim_value() || dims[d].dim_value() == init->dims(d);
    if (!same) {
      auto diag = emitError(loc) << "input '" << in.name()
                                 << "' declares a shape that contradicts its "
                                    "initializer: input [";
      for (int d = 0; d < dims.size(); ++d)
        diag << (d ? "x" : "")
             << (dims[d].has_dim_value() ? std::to_string(dims[d].dim_value())
                                         : dims[d].dim_param());
      diag << "], initializer [";
      for (int d = 0; d < init->dims_size(); ++d)
        diag << (d ? "x" : "") << init->dims(d);
      return diag << "]";
    }
  }
  return success();
}

/// Runs libonnx's checker. The checker insists that external weight files
/// exist, but weft never reads weights; so initializers stored externally are
/// checked as what weft sees of them: graph inputs of their type and shape.
void checkModel(const onnx::ModelProto &model) {
  auto isExternal = [](const onnx::TensorProto &t) {
    return t.data_location() == onnx::TensorProto::EXTERNAL;
  };
  if (llvm::none_of(model.graph().initializer(), isExternal)) {
    onnx::checker::check_model(model);
    return;
  }
  onnx::ModelProto checked = model;
  onnx::GraphProto *graph = checked.mutable_graph();
  llvm::StringSet<> declared;
  for (const auto &in : graph->input())
    declared.insert(in.name());
  auto *inits = graph->mutable_initializer();
  for (int i = inits->size() - 1; i >= 0; --i) {
    const onnx::TensorProto &t = inits->Get(i);
    if (!isExternal(t))
      continue;
    if (!declared.contains(t.name())) {
      onnx::ValueInfoProto *in = graph->add_input();
      in->set_name(t.name());
      auto *type = in->mutable_type()->mutable_tensor_type();
      type->set_elem_type(t.data_type());
      for (int64_t d : t.dims())
        type->mutable_shape()->add_dim()->set_dim_value(d);
    }
    inits->DeleteSubrange(i, 1);
  }
  onnx::checker::check_model(checked);
}

/// The value of metadata_props[key], if present.
std::optional<std::string> metadata(const onnx::ModelProto &model,
                                    StringRef key) {
  for (const auto &entry : model.metadata_props())
    if (entry.key() == key)
      return entry.value();
  return std::nullopt;
}

/// Resolves what the model's weft metadata and --frozen ask for into
/// `options`: frozen patterns become exact initializer names, recorded
/// example shapes fill inputs that --input-shape does not name and whose
/// dims are symbolic.
LogicalResult resolveWeftOptions(const onnx::ModelProto &model,
                                 ImportOptions &options, Location loc) {
  SmallVector<std::pair<std::string, std::string>> patterns; // (text, origin)
  for (const std::string &p : options.frozen)
    patterns.push_back({p, "--frozen"});
  if (options.frozenFromMetadata)
    if (std::optional<std::string> listed =
            metadata(model, kFrozenMetadataKey)) {
      SmallVector<StringRef> names;
      StringRef(*listed).split(names, ',', -1, /*KeepEmpty=*/false);
      for (StringRef name : names)
        patterns.push_back({name.trim().str(), "metadata weft.frozen"});
    }
  std::vector<std::string> frozen;
  for (const auto &[text, origin] : patterns) {
    llvm::Expected<llvm::GlobPattern> glob = llvm::GlobPattern::create(text);
    if (!glob)
      return emitError(loc) << origin << " '" << text
                            << "': " << llvm::toString(glob.takeError());
    bool matched = false;
    for (const auto &init : model.graph().initializer())
      if (glob->match(init.name()) && isFloatDtype(init.data_type())) {
        frozen.push_back(init.name());
        matched = true;
      }
    if (!matched)
      return emitError(loc) << origin << " '" << text
                            << "' matches no float initializer of the model";
  }
  options.frozen = std::move(frozen);

  if (std::optional<std::string> rows =
          metadata(model, kPaddingIdxMetadataKey)) {
    SmallVector<StringRef> specs;
    StringRef(*rows).split(specs, ',', -1, /*KeepEmpty=*/false);
    for (StringRef spec : specs) {
      auto [name, row] = spec.trim().rsplit('=');
      int64_t index;
      auto init =
          llvm::find_if(model.graph().initializer(),
                        [&](const auto &t) { return t.name() == name; });
      if (row.getAsInteger(10, index) || index < 0 ||
          init == model.graph().initializer().end() || init->dims_size() < 1 ||
          index >= init->dims(0))
        return emitError(loc)
               << "metadata " << kPaddingIdxMetadataKey << " '" << spec.trim()
               << "': expected NAME=ROW naming a float initializer and a row "
                  "it has";
      options.paddingRows[name.str()] = index;
    }
  }

  std::optional<std::string> shapes = metadata(model, kInputShapesMetadataKey);
  if (!shapes)
    return success();
  SmallVector<StringRef> specs;
  StringRef(*shapes).split(specs, ',', -1, /*KeepEmpty=*/false);
  for (StringRef spec : specs) {
    std::map<std::string, SmallVector<int64_t>> parsed;
    std::string why;
    if (failed(parseInputShape(spec.trim(), parsed, why)))
      return emitError(loc)
             << "metadata " << kInputShapesMetadataKey << ": " << why;
    for (auto &[name, shape] : parsed) {
      if (options.inputShapes.count(name))
        continue;
      auto in = llvm::find_if(model.graph().input(),
                              [&](const auto &i) { return i.name() == name; });
      if (in == model.graph().input().end())
        continue;
      const auto &dims = in->type().tensor_type().shape().dim();
      if (llvm::any_of(dims, [](const auto &d) { return !d.has_dim_value(); }))
        options.inputShapes[name] = shape;
    }
  }
  return success();
}

} // namespace

OwningOpRef<ModuleOp> weft::importONNX(StringRef buffer, StringRef sourceName,
                                       bool isText,
                                       const ImportOptions &options,
                                       MLIRContext *context) {
  context->loadDialect<WeftDialect, func::FuncDialect>();
  ImportOptions resolved = options;
  Location loc = FileLineColLoc::get(context, sourceName, 0, 0);
  onnx::ModelProto model;
  // libonnx reports through exceptions; each stage names itself in the error.
  try {
    if (isText) {
      std::string text = buffer.str();
      onnx::Common::Status status =
          onnx::OnnxParser::Parse(model, text.c_str());
      if (!status.IsOK()) {
        emitError(loc) << "cannot parse ONNX text: " << status.ErrorMessage();
        return {};
      }
    } else if (!model.ParseFromArray(buffer.data(), buffer.size())) {
      emitError(loc) << "not a valid ONNX model: the protobuf does not parse "
                        "(truncated or not an .onnx file)";
      return {};
    }
    if (!model.has_graph()) {
      emitError(loc) << "not a valid ONNX model: it has no graph";
      return {};
    }
    if (failed(checkSupported(model, loc)))
      return {};
    // Integer and bool initializers are constants (shapes, indices, masks)
    // that shape inference and folding read: bring external ones inline.
    // Float initializers are weights and stay where they are, unread.
    std::string modelDir = llvm::sys::path::parent_path(sourceName).str();
    for (onnx::TensorProto &init :
         *model.mutable_graph()->mutable_initializer()) {
      std::string why;
      if (init.data_location() == onnx::TensorProto::EXTERNAL &&
          !isFloatDtype(init.data_type()) &&
          !inlineExternalData(init, modelDir, why)) {
        emitError(loc) << "cannot read initializer '" << init.name()
                       << "': " << why;
        return {};
      }
    }
    if (defaultOpset(model) < 0) {
      emitError(loc)
          << "not a valid ONNX model: no default-domain opset_import";
      return {};
    }
    // libonnx's checker and version converter abort on an opset it does
    // not know (an assertion, not an exception).
    if (int64_t opset = defaultOpset(model); opset > newestKnownOpset()) {
      emitError(loc) << "the model imports ONNX opset " << opset
                     << "; weft reads opsets 1 to " << newestKnownOpset()
                     << " (libonnx " << ONNX_VERSION_STRING
                     << "): export with an opset up to " << newestKnownOpset();
      return {};
    }
    if (failed(checkLibonnxHazards(model, loc)))
      return {};
    try {
      checkModel(model);
    } catch (const std::exception &e) {
      emitError(loc) << "the ONNX checker rejects the model: " << e.what();
      return {};
    }
    // Before conversion: the converter's shape inference would report the
    // clash less plainly.
    if (failed(checkInitializerInputs(model, loc)))
      return {};
    int64_t opset = defaultOpset(model);
    if (opset != kImportOpset) {
      try {
        // Some adapters (opset-6 broadcasting) need operand shapes: infer
        // them leniently first.
        onnx::shape_inference::InferShapes(model);
        model = onnx::version_conversion::ConvertVersion(model, kImportOpset);
      } catch (const std::exception &e) {
        emitError(loc) << "cannot convert the model from opset " << opset
                       << " to " << kImportOpset << ": " << e.what();
        return {};
      }
    }
    if (failed(resolveWeftOptions(model, resolved, loc)) ||
        failed(fixInputShapes(model, resolved, loc)))
      return {};
    try {
      onnx::ShapeInferenceOptions inference(/*check_type=*/true,
                                            /*strict_mode=*/1,
                                            /*data_prop=*/true);
      onnx::shape_inference::InferShapes(
          model, onnx::OpSchemaRegistry::Instance(), inference);
    } catch (const std::exception &e) {
      // libonnx lists every node the first failure cascades into; the
      // first is the cause.
      SmallVector<StringRef> lines;
      StringRef(e.what()).split(lines, '\n', -1, /*KeepEmpty=*/false);
      auto first = llvm::find_if(lines, [](StringRef l) {
        return l.contains("node name") || l.contains("op_type");
      });
      auto diag = emitError(loc)
                  << "ONNX shape inference fails: "
                  << (first != lines.end() ? first->trim()
                                           : StringRef(e.what()));
      if (lines.size() > 1)
        diag << "\n  (" << lines.size() - 1 << " more line(s) of libonnx's "
             << "report follow from it)";
      // The node that fixes the batch, not where libonnx trips on it.
      StringRef report(e.what()), failing;
      if (size_t at = report.find("node name: "); at != StringRef::npos)
        failing = report.drop_front(at + 11).take_until(
            [](char c) { return c == ')'; });
      int64_t batch = globalBatchOf(model, resolved);
      SmallVector<int64_t> dims;
      const onnx::NodeProto *reshape =
          resolved.batchSplit() > 1 && batch > 1 && !failing.empty()
              ? fixedBatchReshape(model, failing, batch, &dims)
              : nullptr;
      if (reshape) {
        diag.abandon();
        auto named = emitError(loc)
                     << "Reshape node '" << nodeName(*reshape)
                     << "': its shape, fixed at export, does not follow the "
                        "split batch (libonnx's shape inference then fails "
                        "at '"
                     << failing << "')";
        explainFixedBatch(named, *reshape, dims, batch, resolved);
        return {};
      }
      if (resolved.batchSplit() > 1)
        diag << "\n  with " << resolved.batchSplitFlags()
             << ": a graph exported at a fixed batch cannot be split; "
             << kDynamicBatchFix;
      return {};
    }
  } catch (const std::exception &e) {
    emitError(loc) << "libonnx error: " << e.what();
    return {};
  }

  OpBuilder builder(context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  (*module)->setAttr("weft.source", builder.getStringAttr(sourceName));
  (*module)->setAttr("weft.opset", builder.getI64IntegerAttr(kImportOpset));
  GraphImporter importer(context, model, resolved, sourceName);
  if (failed(importer.run(*module)) || failed(checkTensorSizes(*module)) ||
      failed(verify(*module)))
    return {};
  return module;
}
