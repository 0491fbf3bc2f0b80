//===- SimulatePipeline.cpp - weft-simulate-pipeline ----------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/DeviceModelFile.h"
#include "weft/Analysis/PipelineSimulation.h"

#include "llvm/Support/FormatVariadic.h"

namespace weft {
#define GEN_PASS_DEF_SIMULATEPIPELINE
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {

struct SimulatePipelinePass
    : weft::impl::SimulatePipelineBase<SimulatePipelinePass> {
  using SimulatePipelineBase::SimulatePipelineBase;
  SimulatePipelinePass(std::optional<SimResult> *prediction,
                       llvm::StringRef device)
      : prediction(prediction) {
    deviceModel = device.str();
  }

  /// Where the prediction is left, or null (createSimulatePipeline).
  std::optional<SimResult> *prediction = nullptr;

  void runOnOperation() override {
    FailureOr<DeviceModel> loaded =
        deviceModelOption(deviceModel, getOperation());
    if (failed(loaded))
      return signalPassFailure();
    const DeviceModel &device = *loaded;
    std::vector<std::vector<SimOp>> programs =
        stagePrograms(getOperation(), device);
    if (programs.empty())
      return;
    SimResult result = simulatePipeline(programs, device);
    if (!result.completed) {
      Operation *at = programs[result.blockedRank][result.blockedOp].op;
      (at ? at->emitError() : getOperation().emitError()) << result.deadlock;
      return signalPassFailure();
    }
    if (print) {
      llvm::errs() << llvm::formatv(
          "pipeline: stages={0} step_us={1:f1} bubble={2:f4}\n",
          programs.size(), result.stepSeconds * 1e6, result.bubbleFraction);
      for (auto [s, busy] : llvm::enumerate(result.busySeconds))
        llvm::errs() << llvm::formatv("pipeline: stage {0} busy_us={1:f1}\n", s,
                                      busy * 1e6);
    }
    if (prediction)
      *prediction = std::move(result);
  }
};

} // namespace

std::unique_ptr<Pass>
weft::createSimulatePipeline(std::optional<SimResult> *prediction,
                             llvm::StringRef deviceModel) {
  return std::make_unique<SimulatePipelinePass>(prediction, deviceModel);
}
