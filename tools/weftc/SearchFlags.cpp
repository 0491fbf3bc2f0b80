//===- SearchFlags.cpp - weftc --auto-parallel's flags and driver ---------===//

#include "SearchFlags.h"

#include "LayoutEstimate.h"
#include "LayoutFlags.h"

#include "weft/Analysis/DeviceModelFile.h"
#include "weft/Analysis/ModelSummary.h"
#include "weft/Analysis/RepeatedLayers.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/SourceMgr.h"

#include <mutex>

using namespace mlir;
using namespace llvm;

namespace weftc {
cl::opt<bool> autoParallel(
    "auto-parallel",
    cl::desc("Search the layouts of --devices N (degrees, micro-batches, "
             "schedule, recompute, sequence parallelism, ZeRO, flash "
             "attention; docs/planner.md), print the --top K by predicted "
             "step, and with -o compile the fastest that fits --memory-cap "
             "(default: the device model's memory)"),
    cl::init(false), cl::cat(optionCategory()));
cl::opt<int64_t>
    devices("devices",
            cl::desc("With --auto-parallel: the devices to lay out on"),
            cl::init(0), cl::cat(optionCategory()));
cl::opt<int64_t> globalBatch(
    "global-batch",
    cl::desc("With --auto-parallel: the samples a step trains on, dim 0 of "
             "the model's inputs (default: the model's)"),
    cl::init(0), cl::cat(optionCategory()));
cl::opt<int64_t> top("top",
                     cl::desc("With --auto-parallel: the layouts shown "
                              "(default 5)"),
                     cl::init(5), cl::cat(optionCategory()));
cl::opt<std::string>
    search("search",
           cl::desc("With --auto-parallel: compile every layout (compile), or "
                    "estimate each from a one-stage compile of its class and "
                    "compile the most promising (estimate); auto (default) "
                    "compiles every layout when there are at most 400"),
           cl::init("auto"), cl::cat(optionCategory()));
cl::opt<int64_t> confirm(
    "confirm",
    cl::desc("With --auto-parallel estimating: compile at most N of the "
             "layouts estimated fastest, in order, while the next is "
             "estimated faster than the fastest compiled that fits; while "
             "none fits, up to 4N (default 16; 0: none, and the plan is "
             "the fastest estimate's)"),
    cl::init(16), cl::cat(optionCategory()));
cl::opt<bool> profileWholeModel(
    "profile-whole-model",
    cl::desc("With --auto-parallel estimating: profile each class on the "
             "whole model, not on its first 2 and 3 repeated layers "
             "extrapolated (the default for 6 layers or more)"),
    cl::init(false), cl::cat(optionCategory()));
cl::opt<bool> explain(
    "explain",
    cl::desc("With --auto-parallel: score the layout the flags give "
             "(--pipeline-parallel, --microbatches, ...) the same way and "
             "show it beside the best"),
    cl::init(false), cl::cat(optionCategory()));
} // namespace weftc

std::optional<int>
weftc::searchLayoutFlags(MemoryBuffer &model, const SearchFlags &flags,
                         FillOptions fillOptions,
                         std::map<std::string, SmallVector<int64_t>> &shapes) {
  auto fail = [](const Twine &message) {
    errs() << "weftc: " << message << "\n";
    return 1;
  };
  if (!autoParallel) {
    for (cl::Option *flag : std::initializer_list<cl::Option *>{
             &devices, &globalBatch, &top, &search, &confirm, &explain,
             &profileWholeModel})
      if (flag->getNumOccurrences())
        return fail("--" + flag->ArgStr + " needs --auto-parallel");
    return std::nullopt;
  }
  // The flags' names first: --explain reads the layout they give.
  {
    weft::PlanPipelineOptions checked;
    weft::ImportOptions unusedImport;
    if (!fillOptions(checked, unusedImport))
      return 1;
  }
  weft::Layout mine = layoutOfFlags();
  int64_t n = devices.getNumOccurrences() ? devices
              : explain                   ? mine.devices()
                                          : 0;
  if (n < 1)
    return fail("--auto-parallel needs --devices N, N at least 1");
  if (top < 1)
    return fail("--top must be at least 1");
  if (confirm < 0)
    return fail("--confirm must be at least 0");
  if (search != "auto" && search != "compile" && search != "estimate")
    return fail("--search '" + search +
                "': expected auto, compile or "
                "estimate");
  if (globalBatch.getNumOccurrences() && globalBatch < 1)
    return fail("--global-batch must be at least 1");
  if (explain && mine.devices() != n)
    return fail("--explain: the flags' layout runs on " +
                Twine(mine.devices()) + " devices (P x T x D), --devices is " +
                Twine(n));
  weft::DeviceModel device;
  if (!flags.deviceModel.empty()) {
    Expected<weft::DeviceModel> loaded =
        weft::loadDeviceModel(flags.deviceModel);
    if (!loaded)
      return fail("--device-model: " + toString(loaded.takeError()));
    device = *loaded;
  }
  // The model's loss and batch, from an import of the whole batch.
  weft::PlanPipelineOptions planOptions;
  weft::ImportOptions base;
  setLayoutFlags(weft::Layout());
  if (!fillOptions(planOptions, base))
    return 1;
  MLIRContext context;
  context.printOpOnDiagnostic(false);
  SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  StringRef source = flags.inputFile;
  bool text = weft::isONNXTextPath(source);
  OwningOpRef<ModuleOp> probe =
      weft::importONNX(model.getBuffer(), source, text, base, &context);
  if (!probe)
    return 1;
  auto func = cast<func::FuncOp>(probe->getBody()->front());
  if (!weft::isTrainable(func))
    return fail("--auto-parallel lays out a training step: '" +
                flags.inputFile +
                "' does not return a scalar float loss of parameters");
  // The batch is dim 0 of the first input; --global-batch replaces it in
  // every input that shares it.
  int64_t batch = 0;
  std::map<std::string, SmallVector<int64_t>> batched;
  for (BlockArgument arg : func.getArguments()) {
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), weft::kInputAttr);
    auto type = cast<RankedTensorType>(arg.getType());
    if (!name || type.getRank() == 0 || (batch && type.getDimSize(0) != batch))
      continue;
    batch = type.getDimSize(0);
    batched[name.str()] = SmallVector<int64_t>(type.getShape());
  }
  // Every batched input at `samples` a step.
  auto withBatch = [&](int64_t samples) {
    std::map<std::string, SmallVector<int64_t>> shapes = base.inputShapes;
    for (auto [name, shape] : batched) {
      shape[0] = samples;
      shapes[name] = shape;
    }
    return shapes;
  };
  if (globalBatch.getNumOccurrences())
    base.inputShapes = withBatch(globalBatch);
  shapes = base.inputShapes;
  weft::SearchRequest request;
  request.space.devices = n;
  request.space.batch = globalBatch.getNumOccurrences() ? globalBatch
                        : batch                         ? batch
                                                        : 1;
  request.space.maxTensor = std::min(n, device.devicesPerNode);
  request.space.maxStages = weft::countRepeatedLayers(func);
  request.capBytes = flags.memoryCap > 0 ? flags.memoryCap : device.memoryBytes;
  request.top = top;
  if (explain)
    request.explain = mine;
  request.device = device;
  request.sixteenBit = flags.sixteenBit;
  request.confirm = confirm;
  request.shortProfiles = !profileWholeModel;
  // The partitioner cuts a model of repeated layers only between them (and
  // the search keeps stages within the layers), any other between ops.
  request.segments = request.space.maxStages > 0
                         ? weft::segmentCosts(func, device)
                         : weft::partitionCosts(func, device);
  request.segments.items.clear(); // the ops die with the import
  request.shardThresholdBytes =
      int64_t(planOptions.optimizerShardThresholdKb * 1024);
  request.bucketCapBytes = int64_t(planOptions.bucketCapMb * (1 << 20));
  request.mode = search == "compile"    ? weft::SearchMode::Compile
                 : search == "estimate" ? weft::SearchMode::Estimate
                                        : weft::SearchMode::Auto;
  // The layout flags are globals, and the search compiles profiles on
  // several threads: each sets and reads them under the lock.
  std::mutex flagsLock;
  // The profiles' cut models, imported once each (by layers kept and
  // samples): a profile's import options are alike for every class
  // (P = D = M = 1). Empty bytecode: the error why.
  struct ShortModel {
    std::string bytecode, error;
  };
  std::map<std::pair<int64_t, int64_t>, ShortModel> shortModels;
  std::mutex shortLock;
  auto score = [&](const weft::Layout &layout, int64_t samples,
                   weft::StepProfile *profile,
                   int64_t layers) -> weft::LayoutScore {
    weft::PlanPipelineOptions candidate;
    weft::ImportOptions importOptions;
    {
      std::lock_guard<std::mutex> lock(flagsLock);
      setLayoutFlags(layout);
      (void)fillOptions(candidate, importOptions); // its flags passed above
    }
    importOptions.inputShapes =
        samples > 0 ? withBatch(samples) : base.inputShapes;
    StringRef imported;
    if (layers > 0) {
      std::lock_guard<std::mutex> lock(shortLock);
      auto [it, fresh] = shortModels.try_emplace({layers, samples});
      ShortModel &cut = it->second;
      if (fresh)
        cut.bytecode = weft::importShortModel(model.getBuffer(), source, text,
                                              importOptions, layers, cut.error);
      if (cut.bytecode.empty()) {
        weft::LayoutScore failed;
        failed.layout = layout;
        failed.error = cut.error;
        return failed;
      }
      imported = cut.bytecode;
    }
    candidate.step = weft::CompiledStep::Train;
    // A profile's W tasks apart from B (the same plan, tagged).
    candidate.splitWeightGradients = profile != nullptr;
    return weft::scoreLayout(layout, model.getBuffer(), source, text,
                             importOptions, candidate, device, flags.sixteenBit,
                             profile, imported);
  };
  Expected<weft::Layout> best = weft::searchLayouts(request, score, outs());
  if (!best)
    return fail("--auto-parallel: " + toString(best.takeError()));
  setLayoutFlags(*best);
  if (flags.outputFile == "-")
    return 0;
  return std::nullopt;
}
