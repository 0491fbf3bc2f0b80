//===- weftc.cpp - the weft compiler driver -------------------------------===//
//
// weftc MODEL [--input-shape NAME=DxD...]
//       [--emit=import|mlir|summary|summary-json|plan] [--print-pipeline]
//       [-o plan.json] [--optimizer ... --microbatches M]
//       [--pipeline-parallel P --schedule 1f1b|gpipe|interleaved|zb-h1|
//        zb-h2|zb-v --virtual-stages V --balance N,N,...]
//       [--tensor-parallel T --tensor-parallel-fallback error|replicate]
//       [--data-parallel D --bucket-cap-mb MB --zero-stage 0..3
//        --optimizer-shard-threshold KB --optimizer-shard-size S
//        --zero-prefetch]
//       [--sequence-parallel] [--overlap-collectives=false]
//       [--precision bf16|f16|f32 [--fp32-residual-connection]]
//       [--timeline F.json] [--timeline-ascii]
//       [--recompute none|full|selective --recompute-granularity stage|layer]
//       [--flash-attention] [--split-weight-gradients]
//       [--estimate-memory [--activation-dtype f16|bf16|f32]]
//       [--memory-cap BYTES]
//
// Imports an ONNX model (binary .onnx or ONNX text .onnxtxt) and prints its
// weft IR, a summary (parameters, FLOPs, op histogram), or compiles it into
// an execution plan: a training step, pipelined over P stages on request.
// The compile is weft-plan-pipeline (Pipelines.h), whose options weftc fills
// from its flags: --print-pipeline prints them for weft-opt.
//
//===----------------------------------------------------------------------===//

#include "LayoutFlags.h"
#include "MemoryReport.h"
#include "ModelSummaryOutput.h"
#include "PipelineReport.h"
#include "PlanOutput.h"
#include "SearchFlags.h"

#include "weft/Analysis/DeviceModelFile.h"
#include "weft/Analysis/GradientBuckets.h"
#include "weft/Analysis/ModelSummary.h"
#include "weft/Analysis/Schedule.h"
#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/Import/ONNX/ImportONNX.h"
#include "weft/Target/Plan/EmitPlan.h"
#include "weft/Transforms/NameFailedPass.h"
#include "weft/Transforms/Passes.h"
#include "weft/Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <nlohmann/json.hpp>

using namespace mlir;
using namespace llvm;
using namespace weftc;

namespace {
cl::OptionCategory &category = weftc::optionCategory();

cl::opt<std::string> inputFile(cl::Positional,
                               cl::desc("<model.onnx | model.onnxtxt>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
cl::list<std::string> frozenInitializers(
    "frozen",
    cl::desc("Keep these float initializers constant (no gradient, no "
             "optimizer state, saved unchanged): exact names or globs "
             "(*, ?, [..]), comma-separated; added to the model's "
             "weft.frozen metadata"),
    cl::value_desc("NAME[,NAME...]"), cl::CommaSeparated, cl::cat(category));
cl::opt<bool> ignoreFrozenMetadata(
    "no-frozen-metadata",
    cl::desc("Train the initializers the model's weft.frozen metadata lists"),
    cl::init(false), cl::cat(category));
cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Static shape for a model input, replacing symbolic dims: "
             "NAME=DxDx... (repeatable; NAME= for a scalar)"),
    cl::value_desc("NAME=DxD..."), cl::cat(category));
cl::list<std::string> frozenInputs(
    "freeze-input",
    cl::desc("Bind a model input to the constant in an ONNX TensorProto file "
             "(for inputs that feed shapes, axes, pads...): NAME=FILE.pb"),
    cl::value_desc("NAME=FILE.pb"), cl::cat(category));

enum class Emit { Import, MLIR, Summary, SummaryJSON, Plan, PlanJSON };
cl::opt<Emit> emit(
    "emit", cl::desc("What to print"), cl::init(Emit::MLIR),
    cl::values(clEnumValN(Emit::Import, "import",
                          "the weft IR as imported, before any pass (the "
                          "input of weft-opt --weft-plan-pipeline)"),
               clEnumValN(Emit::MLIR, "mlir", "the compiled weft IR"),
               clEnumValN(Emit::Summary, "summary",
                          "parameters, FLOPs and op histogram as text"),
               clEnumValN(Emit::SummaryJSON, "summary-json",
                          "the summary as one JSON object: params, "
                          "param_bytes, state_bytes, flops, ops"),
               clEnumValN(Emit::Plan, "plan",
                          "the execution plan (JSON, docs/plan-format.md); "
                          "the default when -o names a .json file"),
               clEnumValN(Emit::PlanJSON, "plan-json",
                          "the plan as each rank sees it (its program with "
                          "its coordinates filled in; --view-rank for one "
                          "rank): for reading, not for weft-run")),
    cl::cat(category));
cl::opt<int64_t> viewRank(
    "view-rank",
    cl::desc("With --emit=plan-json: only this rank's view (default: all)"),
    cl::init(-1), cl::cat(category));
cl::opt<bool> explicitPlan(
    "explicit-plan",
    cl::desc("Write every micro-batch's instructions, not task bodies (for "
             "diffs and for checking the task form)"),
    cl::cat(category));
cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the IR after every pass, naming the pass whose output "
             "is invalid (default: once, after the last pass)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Import each '# -----'-separated chunk of an .onnxtxt file as its "
             "own model (for tests)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> gradients(
    "gradients",
    cl::desc("Differentiate the model (weft-autodiff) without an optimizer: "
             "the outputs are the loss and every parameter's gradient"),
    cl::init(false), cl::cat(category));
cl::opt<bool> forwardOnly(
    "forward-only",
    cl::desc("Compile the forward pass only, even for a model that ends in a "
             "scalar loss (default: a training step when it does)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> train(
    "train",
    cl::desc("Require a training step: fail, saying why, when the model does "
             "not end in a scalar float loss that depends on a parameter"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> optimizer("optimizer",
                               cl::desc("Optimizer of the training step: "
                                        "adamw (default) or sgd"),
                               cl::init("adamw"), cl::cat(category));
cl::opt<double> lr("lr", cl::desc("Learning rate (default 1e-3)"),
                   cl::init(1e-3), cl::cat(category));
cl::opt<double>
    weightDecay("weight-decay",
                cl::desc("Weight decay (default as torch: AdamW 0.01, SGD 0)"),
                cl::init(-1.0), cl::cat(category));
cl::opt<double> momentum("momentum", cl::desc("SGD momentum (default 0)"),
                         cl::init(0.0), cl::cat(category));
cl::opt<bool> nesterov("nesterov", cl::desc("SGD Nesterov momentum"),
                       cl::init(false), cl::cat(category));
cl::opt<std::string> betas("betas",
                           cl::desc("AdamW betas B1,B2 (default 0.9,0.999)"),
                           cl::init("0.9,0.999"), cl::cat(category));
cl::opt<double> clipGradNorm(
    "clip-grad-norm",
    cl::desc("Before the update, scale the gradients so that their 2-norm "
             "over the whole model (every rank's shards) is at most C: "
             "torch.nn.utils.clip_grad_norm_(parameters, C) (default 0: off)"),
    cl::init(0.0), cl::cat(category));
cl::opt<double> eps("eps", cl::desc("AdamW epsilon (default 1e-8)"),
                    cl::init(1e-8), cl::cat(category));
cl::opt<std::string> precision(
    "precision",
    cl::desc("Mixed precision: bf16 or f16 run matmuls, convolutions and "
             "activations in 16 bits with f32 master weights, optimizer "
             "state, norms, softmax and loss (torch.autocast's lists); f32 "
             "(default) as the model is typed"),
    cl::init("f32"), cl::cat(category));
cl::opt<bool> fp32ResidualConnection(
    "fp32-residual-connection",
    cl::desc("With --precision bf16|f16: embedding lookups, and so the "
             "residual stream they start, in f32 (Megatron-LM's flag)"),
    cl::init(false), cl::cat(category));
cl::opt<bool> splitWeightGradients(
    "split-weight-gradients",
    cl::desc("Split each backward into B (what activations' gradients "
             "need) and W (what only weight gradients need; Qi et al. "
             "2024): #weft.task<W> in IR dumps. GPipe and 1F1B run each W "
             "in its B's task: the plan is the same"),
    cl::init(false), cl::cat(category));
cl::opt<double> bucketCapMb(
    "bucket-cap-mb",
    cl::desc("Data-parallel gradient bucket size limit in MiB, as DDP's "
             "bucket_cap_mb (default 25; 0: one all-reduce per gradient)"),
    cl::init(weft::kBucketCapMb), cl::cat(category));
cl::opt<double> optimizerShardThreshold(
    "optimizer-shard-threshold",
    cl::desc("With --zero-stage: parameters under this many KiB stay "
             "replicated, all-reduced (MindSpore's threshold; default 64)"),
    cl::init(weft::kShardThresholdKb), cl::cat(category));
cl::opt<int64_t> optimizerShardSize(
    "optimizer-shard-size",
    cl::desc("With --zero-stage: shard over groups of S replicas (S "
             "divides --data-parallel; default 0: all of them), each "
             "group's pieces all-reduced across the groups (MindSpore's "
             "shard_size, FSDP's hybrid sharding)"),
    cl::init(0), cl::cat(category));
cl::opt<bool> zeroPrefetch(
    "zero-prefetch",
    cl::desc("With --zero-stage 1 or 2: parameters stay pieces between "
             "steps and are all-gathered at the next step's start, "
             "overlapping its forward (MindSpore's level1/level2)"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> tensorParallelFallback(
    "tensor-parallel-fallback",
    cl::desc("A block with an op the split cannot handle: error (default) "
             "or replicate (with a warning)"),
    cl::init("error"), cl::cat(category));
cl::opt<bool> overlapCollectives(
    "overlap-collectives",
    cl::desc("Post each collective (tensor, sequence, data parallel) early "
             "and wait "
             "for it at its first reader, so compute overlaps it (default "
             "true; =false completes each before the next op)"),
    cl::init(true), cl::cat(category));
cl::opt<std::string> deviceModel(
    "device-model",
    cl::desc("The device whose rates time the ops for the partitioner and "
             "the predicted step: a100-sxm4-80gb, h100-sxm5-80gb, "
             "h200-sxm-141gb, cpu (bench/devices), or a JSON file of the "
             "same fields (docs/planner.md); default: the CPU default"),
    cl::init(""), cl::cat(category));
cl::list<int64_t> balance(
    "balance",
    cl::desc("Ops per stage, e.g. 40,60 (torchgpipe's balance); default: "
             "the cost-balanced partition"),
    cl::CommaSeparated, cl::cat(category));
cl::opt<std::string> timeline(
    "timeline",
    cl::desc("Write the predicted pipeline timeline as a Chrome trace"),
    cl::value_desc("file.json"), cl::init(""), cl::cat(category));
cl::opt<bool> timelineAscii(
    "timeline-ascii",
    cl::desc("Print the predicted pipeline timeline as a text Gantt chart"),
    cl::init(false), cl::cat(category));
cl::opt<bool> estimateMemory(
    "estimate-memory",
    cl::desc("Print each rank's planned memory by category (parameters, "
             "optimizer state, kept activations, gradients, ...) at its peak "
             "and exit without writing a plan"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> activationDtype(
    "activation-dtype",
    cl::desc("With --estimate-memory: size every float tensor the step "
             "computes (activations, gradients, transfers) as f32, f16 or "
             "bf16, as under mixed precision; parameters, optimizer state and "
             "masks keep their type (default: as typed, f32)"),
    cl::init(""), cl::cat(category));
cl::opt<int64_t> memoryCap(
    "memory-cap",
    cl::desc("Fail, printing the breakdown, when a rank's planned arena "
             "exceeds BYTES"),
    cl::value_desc("BYTES"), cl::init(0), cl::cat(category));
cl::opt<bool> listOps("list-supported-ops",
                      cl::desc("Print the supported ONNX operators and exit"),
                      cl::init(false), cl::cat(category));
cl::opt<bool> printPipeline(
    "print-pipeline",
    cl::desc("Print the weft-opt option that compiles this model as weftc "
             "would (weftc MODEL --emit=import | weft-opt <it>) and exit"),
    cl::init(false), cl::cat(category));

/// The compiled IR is not destroyed once the plan is written: the process
/// ends, and freeing a GPT-3 plan's millions of ops one by one took seconds
/// (clang's -disable-free). Kept reachable, so a leak checker is silent.
void keepUntilExit(Operation *ir) {
  static std::vector<Operation *> kept;
  kept.push_back(ir);
}

LogicalResult processModel(std::unique_ptr<MemoryBuffer> buffer,
                           const weft::ImportOptions &options,
                           weft::PlanPipelineOptions &pipelineOptions,
                           raw_ostream &os) {
  MLIRContext context;
  // A pass error names the ONNX node (the op's location) in one line; the
  // op itself, often the whole step function (tens of kB), is printed only
  // with --mlir-print-ir-after-failure.
  context.printOpOnDiagnostic(false);
  SourceMgr sourceMgr;
  StringRef source = inputFile;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      weft::importONNX(buffer->getBuffer(), source,
                       weft::isONNXTextPath(source), options, &context);
  if (!module)
    return failure();
  if (emit == Emit::Import) {
    module->print(os);
    os << "\n";
    return success();
  }
  auto func = cast<func::FuncOp>(module->getBody()->front());
  // The summary describes the model (its forward graph); the IR and the plan
  // are of the compiled step, a training step when the model has a loss.
  if (emit == Emit::Summary || emit == Emit::SummaryJSON) {
    weft::ModelSummary summary = weft::summarizeModel(func);
    if (emit == Emit::Summary)
      weft::printSummary(summary, source, os);
    else
      os << weft::jsonText(weft::summaryJSON(summary)) << "\n";
    return success();
  }
  if (train && forwardOnly) {
    errs() << "weftc: --train and --forward-only contradict each other\n";
    return failure();
  }
  // --train sends any model through weft-autodiff, whose errors say why a
  // model cannot train; without it, a model without a loss compiles forward.
  bool training = train || (!forwardOnly && weft::isTrainable(func));
  // An empty batch has no loss (its mean is 0/0): it would train on NaN.
  if (training || gradients)
    for (BlockArgument arg : func.getArguments()) {
      auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    weft::kInputAttr);
      auto type = cast<RankedTensorType>(arg.getType());
      if (name && type.getNumElements() == 0) {
        errs() << "weftc: input '" << name.getValue() << "' is " << type
               << ", empty: a training step needs a non-empty batch\n";
        return failure();
      }
    }
  // The compile itself is weft-plan-pipeline, as weft-opt runs it.
  pipelineOptions.step = gradients  ? weft::CompiledStep::Gradients
                         : training ? weft::CompiledStep::Train
                                    : weft::CompiledStep::Forward;
  if (failed(pipelineOptions.validate([&](const Twine &message) {
        errs() << "weftc: " << message << "\n";
      })))
    return failure();
  if (printPipeline) {
    // One argument for weft-opt: quote it in a shell ("$(weftc ...)").
    os << "--weft-plan-pipeline=" << pipelineOptions.textual() << "\n";
    return success();
  }
  // The pipeline's predicted timeline, simulated once by the pipeline's
  // weft-simulate-pipeline and reported below.
  std::optional<weft::SimResult> prediction;
  // --mlir-timing[-display=list|tree]: each pass's wall time and the steps
  // after the pipeline, printed when the compile ends (what grows with the
  // micro-batches: bench/compile_scale.py).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope timingScope = timing.getRootScope();
  {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return failure();
    pm.enableTiming(timingScope);
    pipelineOptions.prediction = &prediction;
    weft::buildPlanPipeline(pm, pipelineOptions);
    // Verified once, after the last pass, unless --verify-each.
    if (failed(weft::runPasses(pm, *module, verifyEach, timingScope,
                               [](const std::string &message) {
                                 errs() << "weftc: " << message << "\n";
                               })))
      return failure();
  }
  bool pipelined = pipelineParallel > 1;
  // Each stage's arena, planned once for the stage table and the plan.
  weft::MemoryPlans memory;
  {
    TimingScope step = timingScope.nest("weftc: pipeline report");
    if ((pipelined || tensorParallel > 1 || dataParallel > 1) &&
        !estimateMemory &&
        failed(weft::reportPipeline(*module, memory, std::move(prediction),
                                    {deviceModel, outputFile == "-",
                                     precision != "f32", timelineAscii,
                                     timeline})))
      return failure();
  }
  {
    TimingScope step = timingScope.nest("weftc: memory check");
    weft::MemoryPlanOptions memoryOptions;
    if (!activationDtype.empty())
      memoryOptions.activationElementBytes =
          *weft::activationElementBytes(activationDtype);
    if ((estimateMemory || memoryCap > 0) &&
        failed(weft::checkMemory(*module, memoryOptions, memoryCap,
                                 estimateMemory)))
      return failure();
  }
  if (estimateMemory)
    return success();
  switch (emit) {
  case Emit::MLIR:
    module->print(os);
    os << "\n";
    break;
  case Emit::Import:
  case Emit::Summary:
  case Emit::SummaryJSON:
    llvm_unreachable("handled before the pipeline");
  case Emit::Plan:
  case Emit::PlanJSON: {
    LogicalResult written =
        weft::writePlan(*module, source, emit == Emit::PlanJSON, viewRank,
                        !explicitPlan, memory, timingScope, os);
    keepUntilExit(module.release());
    return written;
  }
  }
  return success();
}
} // namespace

/// Sets `option` to `parsed`, a name-valued flag's value as its parser
/// read it; false, naming the flag and the names it takes, for a name the
/// parser does not know.
template <typename Option, typename T>
bool setNamed(Option &option, std::optional<T> parsed, StringRef flag,
              StringRef value, StringRef expected) {
  if (parsed) {
    option = *parsed;
    return true;
  }
  errs() << "weftc: --" << flag << " '" << value << "': expected " << expected
         << "\n";
  return false;
}

/// weftc's flags as weft-plan-pipeline's options and the importer's. The
/// names the flags take are checked here (false, naming the flag), the
/// values in PlanPipelineOptions::validate.
bool fillOptions(weft::PlanPipelineOptions &pipelineOptions,
                 weft::ImportOptions &options) {
  pipelineOptions.pipelineParallel = pipelineParallel;
  pipelineOptions.balance = ArrayRef<int64_t>(balance);
  pipelineOptions.microbatches = microbatches;
  pipelineOptions.precision = precision;
  pipelineOptions.fp32ResidualConnection = fp32ResidualConnection;
  pipelineOptions.flashAttention = flashAttention;
  pipelineOptions.splitWeightGradients = splitWeightGradients;
  pipelineOptions.tensorParallel = tensorParallel;
  pipelineOptions.dataParallel = dataParallel;
  pipelineOptions.bucketCapMb = bucketCapMb;
  pipelineOptions.zeroStage = zeroStage;
  pipelineOptions.optimizerShardThresholdKb = optimizerShardThreshold;
  pipelineOptions.zeroPrefetch = zeroPrefetch;
  pipelineOptions.optimizerShardSize = optimizerShardSize;
  pipelineOptions.sequenceParallel = sequenceParallel;
  pipelineOptions.overlapCollectives = overlapCollectives;
  if (!setNamed(pipelineOptions.tensorParallelFallback,
                weft::parseTensorParallelFallback(tensorParallelFallback),
                "tensor-parallel-fallback", tensorParallelFallback,
                "error or replicate") ||
      !setNamed(pipelineOptions.schedule, weft::scheduleNamed(schedule),
                "schedule", schedule,
                "gpipe, 1f1b, interleaved, zb-h1, zb-h2 or zb-v") ||
      !setNamed(pipelineOptions.optimizer, weft::parseOptimizer(optimizer),
                "optimizer", optimizer, "adamw or sgd") ||
      !setNamed(pipelineOptions.recompute,
                weft::parseRecomputePolicy(recompute), "recompute", recompute,
                "none, full or selective") ||
      !setNamed(pipelineOptions.recomputeGranularity,
                weft::parseRecomputeGranularity(recomputeGranularity),
                "recompute-granularity", recomputeGranularity,
                "stage or layer"))
    return false;
  pipelineOptions.virtualStages = virtualStages;
  pipelineOptions.deviceModel = deviceModel;
  auto [beta1, beta2] = StringRef(betas).split(',');
  double b1, b2;
  if (beta1.getAsDouble(b1) || beta2.getAsDouble(b2)) {
    errs() << "weftc: --betas '" << betas << "': expected B1,B2\n";
    return false;
  }
  pipelineOptions.betas = ArrayRef<double>({b1, b2});
  pipelineOptions.lr = lr;
  pipelineOptions.weightDecay = weightDecay;
  pipelineOptions.momentum = momentum;
  pipelineOptions.nesterov = nesterov;
  pipelineOptions.eps = eps;
  pipelineOptions.clipGradNorm = clipGradNorm;
  options.microbatches = microbatches;
  options.dataParallel = dataParallel;
  std::string error;
  for (const std::string &spec : inputShapes)
    if (failed(weft::parseInputShape(spec, options.inputShapes, error))) {
      errs() << "weftc: " << error << "\n";
      return false;
    }
  for (const std::string &spec : frozenInputs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty()) {
      errs() << "weftc: --freeze-input '" << spec
             << "': expected NAME=FILE.pb\n";
      return false;
    }
    options.frozenInputs[name.str()] = file.str();
  }
  options.frozen.assign(frozenInitializers.begin(), frozenInitializers.end());
  options.frozenFromMetadata = !ignoreFrozenMetadata;
  return true;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // weft's passes by name, for MLIR's --mlir-print-ir-after=weft-schedule
  // (and -before): the names weft-opt takes.
  weft::registerWeftPasses();
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "weftc: the weft distributed-training compiler\n");
  if (listOps) {
    for (StringRef op : weft::supportedONNXOps())
      outs() << op << "\n";
    return 0;
  }

  std::string error;
  auto buffer = openInputFile(inputFile, &error);
  if (!buffer) {
    errs() << "weftc: cannot read '" << inputFile << "': " << error << "\n";
    return 1;
  }
  std::map<std::string, SmallVector<int64_t>> searchedShapes;
  if (std::optional<int> done = weftc::searchLayoutFlags(
          *buffer,
          {inputFile, outputFile, deviceModel, memoryCap, precision != "f32"},
          fillOptions, searchedShapes))
    return *done;
  weft::PlanPipelineOptions pipelineOptions;
  weft::ImportOptions options;
  if (!fillOptions(pipelineOptions, options))
    return 1;
  if (weftc::autoParallel)
    options.inputShapes = searchedShapes;
  // The counts are needed before import (the batch is split at import);
  // the step-dependent checks follow once the model is read.
  pipelineOptions.step = forwardOnly ? weft::CompiledStep::Forward
                         : gradients ? weft::CompiledStep::Gradients
                                     : weft::CompiledStep::Train;
  if (failed(pipelineOptions.validate([](const Twine &message) {
        errs() << "weftc: " << message << "\n";
      })))
    return 1;
  if (!activationDtype.empty() &&
      !weft::activationElementBytes(activationDtype)) {
    errs() << "weftc: --activation-dtype '" << activationDtype
           << "': expected f32, f16 or bf16\n";
    return 1;
  }
  if (!activationDtype.empty() && !estimateMemory) {
    errs() << "weftc: --activation-dtype sizes activations for "
              "--estimate-memory only; weft-run executes the plan's own "
              "dtypes\n";
    return 1;
  }

  if (!emit.getNumOccurrences() && StringRef(outputFile).ends_with(".json"))
    emit = Emit::Plan;

  // A file output is written to a temporary file renamed over -o only when
  // the compile succeeds (llvm::writeToOutput discards it otherwise): a
  // failure leaves an existing file as it was, no reader ever sees half a
  // plan, and a GPT-3 plan's text is not held in memory. Standard output
  // streams (with --split-input-file, each chunk's as it compiles); an
  // estimate writes no plan.
  auto compile = [&](raw_ostream &os) {
    auto process = [&](std::unique_ptr<MemoryBuffer> chunk, raw_ostream &out) {
      return processModel(std::move(chunk), options, pipelineOptions, out);
    };
    return splitAndProcessBuffer(std::move(buffer), process, os,
                                 splitInputFile ? "# -----" : "", "// -----");
  };
  if (outputFile == "-" || estimateMemory) {
    std::string unused;
    raw_string_ostream discard(unused);
    raw_ostream &os =
        outputFile == "-" ? static_cast<raw_ostream &>(outs()) : discard;
    return failed(compile(os)) ? 1 : 0;
  }
  bool compiled = false;
  if (Error error = writeToOutput(outputFile, [&](raw_ostream &out) {
        compiled = succeeded(compile(out));
        return compiled ? Error::success()
                        : createStringError("the compile failed");
      })) {
    if (compiled)
      errs() << "weftc: cannot write '" << outputFile
             << "': " << toString(std::move(error)) << "\n";
    else
      consumeError(std::move(error));
    return 1;
  }
  return 0;
}
