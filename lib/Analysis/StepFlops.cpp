//===- StepFlops.cpp - a step's model and hardware FLOPs ------------------===//

#include "weft/Analysis/StepFlops.h"

#include "weft/Analysis/CostModel.h"

#include "weft/Dialect/Weft/IR/Task.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

using namespace mlir;

int64_t weft::contractionFlops(Operation *op) {
  if (std::optional<GemmShape> gemm = gemmShapeOf(op))
    return gemm->flops();
  if (isa<ConvOp, ConvTransposeOp, ConvWeightGradOp, AttentionOp,
          AttentionGradOp>(op))
    return cast<CostOpInterface>(op).getFlops();
  return 0;
}

weft::StepFlops weft::stepFlops(func::FuncOp program) {
  StepFlops flops;
  program.walk([&](Operation *op) {
    int64_t n = contractionFlops(op);
    if (n == 0 || isUpdate(op))
      return;
    flops.hardware += n;
    if (!isRecompute(op))
      flops.model += n;
  });
  return flops;
}

double weft::gptModelFlops(const GptShape &g) {
  return 72 * g.batch * g.seq * g.layers * g.hidden * g.hidden *
         (1 + g.seq / (6 * g.hidden) + g.vocab / (12 * g.hidden * g.layers));
}

double weft::gptHardwareFlops(const GptShape &g, GptRecompute recompute) {
  double base = g.batch * g.seq * g.layers * g.hidden * g.hidden;
  switch (recompute) {
  case GptRecompute::None:
    return gptModelFlops(g);
  case GptRecompute::Selective:
    return 72 * base *
           (1 + g.seq / (3 * g.hidden) + g.vocab / (12 * g.hidden * g.layers));
  case GptRecompute::Full:
    return 96 * base *
           (1 + g.seq / (6 * g.hidden) + g.vocab / (16 * g.hidden * g.layers));
  }
  return 0;
}

double weft::flopsUtilization(double flops, double seconds, int64_t devices,
                              double peakFlopsPerSecond) {
  return flops / (seconds * double(devices) * peakFlopsPerSecond);
}
