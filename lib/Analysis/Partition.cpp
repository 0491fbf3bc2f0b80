//===- Partition.cpp - contiguous pipeline partitioning -------------------===//

#include "weft/Analysis/Partition.h"

#include <cassert>
#include <limits>
#include <vector>

using namespace weft;

double weft::stageTime(llvm::ArrayRef<double> compute,
                       llvm::ArrayRef<double> cut, int64_t begin, int64_t end) {
  double time = 0;
  for (int64_t i = begin; i < end; ++i)
    time += compute[i];
  if (!cut.empty()) {
    if (begin > 0)
      time += cut[begin - 1]; // receive what the previous stage sends
    if (end < static_cast<int64_t>(compute.size()))
      time += cut[end - 1]; // send to the next stage
  }
  return time;
}

Partition weft::partitionBottleneck(llvm::ArrayRef<double> compute,
                                    llvm::ArrayRef<double> cut,
                                    int64_t stages) {
  int64_t n = compute.size();
  assert(stages >= 1 && stages <= n && "need 1 <= stages <= items");
  assert((cut.empty() || static_cast<int64_t>(cut.size()) == n - 1) &&
         "one cut cost per boundary");
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[s][j]: the smallest bottleneck of items [0, j) in s stages;
  // from[s][j]: where the last of those stages starts.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> from(stages + 1,
                                         std::vector<int64_t>(n + 1, -1));
  // Prefix sums make each stage time O(1).
  std::vector<double> prefix(n + 1, 0.0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + compute[i];
  auto timeOf = [&](int64_t begin, int64_t end) {
    double time = prefix[end] - prefix[begin];
    if (!cut.empty() && begin > 0)
      time += cut[begin - 1];
    if (!cut.empty() && end < n)
      time += cut[end - 1];
    return time;
  };
  // With no negative time, a last stage [i, j) takes at least its compute
  // and its end's cut, which grow as i moves left: once that alone exceeds
  // the best found, no earlier start can match it. So the starts are tried
  // from the right and the search stops there: about n / P starts per end,
  // not j (O(n^2), not O(P n^2): a 1T layout's 64 stages over thousands of
  // ops took seconds). Rounding is monotone, so the bound never exceeds
  // the time it bounds, and ties still go to the leftmost start.
  bool nonNegative = llvm::all_of(compute, [](double t) { return t >= 0; }) &&
                     llvm::all_of(cut, [](double t) { return t >= 0; });
  best[0][0] = 0;
  for (int64_t s = 1; s <= stages; ++s)
    for (int64_t j = s; j <= n - (stages - s); ++j)
      for (int64_t i = j - 1; i >= s - 1; --i) {
        double atLeast = prefix[j] - prefix[i];
        if (!cut.empty() && j < n)
          atLeast += cut[j - 1];
        if (nonNegative && atLeast > best[s][j])
          break;
        if (best[s - 1][i] == inf)
          continue;
        double time = std::max(best[s - 1][i], timeOf(i, j));
        if (time <= best[s][j]) {
          best[s][j] = time;
          from[s][j] = i;
        }
      }
  Partition p;
  p.bottleneck = best[stages][n];
  p.starts.assign(stages + 1, n);
  for (int64_t s = stages, j = n; s > 0; --s) {
    j = from[s][j];
    p.starts[s - 1] = j;
  }
  return p;
}

Partition weft::partitionFromBalance(llvm::ArrayRef<double> compute,
                                     llvm::ArrayRef<double> cut,
                                     llvm::ArrayRef<int64_t> balance) {
  Partition p;
  int64_t start = 0;
  for (int64_t count : balance) {
    assert(count > 0 && "every stage needs an item");
    p.starts.push_back(start);
    p.bottleneck =
        std::max(p.bottleneck, stageTime(compute, cut, start, start + count));
    start += count;
  }
  assert(start == static_cast<int64_t>(compute.size()) &&
         "balance must cover every item");
  p.starts.push_back(start);
  return p;
}

double weft::bubbleFraction(int64_t stages, int64_t microbatches,
                            int64_t chunks) {
  double p = stages, m = microbatches, v = chunks;
  return (p - 1) / (v * m + p - 1);
}
