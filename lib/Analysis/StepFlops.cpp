//===- StepFlops.cpp - a step's model and hardware FLOPs ------------------===//

#include "weft/Analysis/StepFlops.h"

#include "weft/Dialect/Weft/IR/Task.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

using namespace mlir;

namespace {
int64_t elements(Type type) { return cast<ShapedType>(type).getNumElements(); }
/// 2 M N K of a gemm-shaped op: `mn` outputs, K from A (transposed or not).
int64_t gemmProduct(Value a, bool transA, int64_t mn) {
  return 2 * mn * cast<ShapedType>(a.getType()).getDimSize(transA ? 0 : 1);
}
} // namespace

int64_t weft::contractionFlops(Operation *op) {
  if (auto matmul = dyn_cast<MatMulOp>(op))
    return matmul.getFlops();
  if (auto gemm = dyn_cast<GemmOp>(op))
    return gemmProduct(gemm.getA(), gemm.getTransA(), elements(gemm.getType()));
  if (auto gemm = dyn_cast<GemmGeluTanhOp>(op))
    return gemmProduct(gemm.getA(), gemm.getTransA(),
                       elements(gemm.getOutput().getType()));
  if (auto gemm = dyn_cast<GemmGeluTanhGradOp>(op))
    return gemmProduct(gemm.getA(), gemm.getTransA(), elements(gemm.getType()));
  if (auto wgrad = dyn_cast<WgradBiasOp>(op)) {
    // dW [K, N] = X^T dY: 2 K N per token row of dY [rows, N].
    auto grad = cast<RankedTensorType>(wgrad.getGrad().getType());
    int64_t k =
        cast<RankedTensorType>(wgrad.getInput().getType()).getDimSize(1);
    return 2 * grad.getNumElements() * k;
  }
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
