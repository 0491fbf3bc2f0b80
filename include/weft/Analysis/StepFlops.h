//===- StepFlops.h - a step's model and hardware FLOPs ----------*- C++ -*-===//
//
// The FLOPs behind MFU and HFU (Korthikanti et al. 2022, Section 6, after
// Chowdhery et al. 2022): model FLOPs are what one iteration needs, forward
// and backward, whatever the implementation; hardware FLOPs are what it
// executes, recomputation included. Both count matrix products only, as the
// paper's Appendix A does (elementwise work is a few percent and left out).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_ANALYSIS_STEPFLOPS_H
#define WEFT_ANALYSIS_STEPFLOPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cstdint>

namespace weft {

/// FLOPs of `op`'s matrix products: a GEMM-shaped op's 2 batch M N K
/// (CostModel.h's gemmShapeOf); a convolution's and fused attention's
/// whole count; 0 otherwise.
int64_t contractionFlops(mlir::Operation *op);

/// A step's contraction FLOPs on one rank's program: `model` sums the
/// forward, backward and weight-gradient tasks (F, B, W), `hardware` adds
/// the recompute tasks (R). Units: FLOPs per step.
struct StepFlops {
  int64_t model = 0;
  int64_t hardware = 0;
};
StepFlops stepFlops(mlir::func::FuncOp program);

/// A GPT's shape for Korthikanti et al.'s Appendix A: global batch B,
/// sequence s, layers L, hidden h, vocabulary V.
struct GptShape {
  double batch, seq, layers, hidden, vocab;
};
enum class GptRecompute { None, Selective, Full };

/// Model FLOPs of one iteration, 72 B s L h^2 (1 + s/6h + V/12hL)
/// (Korthikanti et al. 2022, Appendix A).
double gptModelFlops(const GptShape &shape);

/// Hardware FLOPs of one iteration: the model's without recompute; with
/// selective recompute (the core attention re-run) 72 B s L h^2 (1 + s/3h +
/// V/12hL) (Appendix A); with full recompute (each layer's forward re-run)
/// 96 B s L h^2 (1 + s/6h + V/16hL) (Narayanan et al. 2021, Section 5.1).
double gptHardwareFlops(const GptShape &shape, GptRecompute recompute);

/// FLOPs / (seconds x devices x peak FLOP/s per device): MFU from model
/// FLOPs, HFU from hardware FLOPs (a fraction, not a percentage).
double flopsUtilization(double flops, double seconds, int64_t devices,
                        double peakFlopsPerSecond);

} // namespace weft

#endif // WEFT_ANALYSIS_STEPFLOPS_H
