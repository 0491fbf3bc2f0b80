//===- StepFlopsTest.cpp - Korthikanti et al.'s FLOPs and MFU -------------===//
//
// Appendix A's formulas against the paper's own figures: Table 5's MFU
// column from its iteration times (selective recompute + sequence
// parallelism, A100 bf16 peak 312 TFLOP/s, Table 3's layouts), and
// Section 5's FLOPs overhead of selective recompute (2.7% for GPT-3, 1.6%
// for MT-NLG).
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/StepFlops.h"

#include <gtest/gtest.h>

using namespace weft;

namespace {
struct Row {
  const char *name;
  GptShape shape; // global batch, s, L, h, V (Table 3)
  int64_t gpus;   // Table 3
  double seconds; // Table 5, selective recompute + sequence parallelism
  double mfu;     // Table 5, percent
};
const Row kTable5[] = {
    {"22B", {4, 2048, 48, 6144, 51200}, 8, 1.10, 41.5},
    {"175B", {64, 2048, 96, 12288, 51200}, 64, 13.75, 51.4},
    {"530B", {280, 2048, 105, 20480, 51200}, 280, 37.83, 56.0},
    {"1T", {512, 2048, 128, 25600, 51200}, 512, 71.49, 56.3},
};
} // namespace

TEST(StepFlops, ReproducesTable5sMfuFromItsTimes) {
  // The published times have two decimals and the MFUs one: the MFU of
  // the time +- 0.005 s must reach the published MFU +- 0.05 points.
  for (const Row &row : kTable5) {
    double flops = gptModelFlops(row.shape);
    double slow =
        100 * flopsUtilization(flops, row.seconds + 0.005, row.gpus, 312e12);
    double fast =
        100 * flopsUtilization(flops, row.seconds - 0.005, row.gpus, 312e12);
    EXPECT_LE(slow, row.mfu + 0.05) << row.name;
    EXPECT_GE(fast, row.mfu - 0.05) << row.name;
  }
}

TEST(StepFlops, SelectiveRecomputeCostsWhatSection5Says) {
  // "only 2.7% and 1.6% FLOPs overhead" for GPT-3 and MT-NLG.
  GptShape gpt3{1, 2048, 96, 12288, 51200}, mtnlg{1, 2048, 105, 20480, 51200};
  auto overhead = [](const GptShape &g) {
    return gptHardwareFlops(g, GptRecompute::Selective) / gptModelFlops(g) - 1;
  };
  EXPECT_NEAR(100 * overhead(gpt3), 2.7, 0.05);
  EXPECT_NEAR(100 * overhead(mtnlg), 1.6, 0.05);
  EXPECT_EQ(gptHardwareFlops(gpt3, GptRecompute::None), gptModelFlops(gpt3));
}

TEST(StepFlops, FullRecomputeRerunsEveryLayersForward) {
  // 96 B s L h^2 (1 + s/6h + V/16hL) - 72 B s L h^2 (1 + s/6h + V/12hL) =
  // 24 B s L h^2 + 4 B s^2 L h: the layers' forward products once more,
  // not the LM head's.
  GptShape g{8, 2048, 24, 1024, 51200};
  double extra = gptHardwareFlops(g, GptRecompute::Full) - gptModelFlops(g);
  double layers = 24 * g.batch * g.seq * g.layers * g.hidden * g.hidden +
                  4 * g.batch * g.seq * g.seq * g.layers * g.hidden;
  EXPECT_NEAR(extra / layers, 1.0, 1e-12);
}
