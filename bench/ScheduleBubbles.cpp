//===- ScheduleBubbles.cpp - each schedule's bubble and activations -------===//
//
// Simulates every pipeline schedule's task orders (weft/Analysis/
// TaskOrder.h) for uniform stages and free transfers, T_F = T_B = T_W of
// one stage's layers (a chunk of v per rank takes 1/v of it), and prints
// per (schedule, p, m): the bubble fraction of the step, the closed form
// the schedule's paper gives where it gives one, rank 0's idle time inside
// the step in units of T_F, and rank 0's peak activations in micro-batches
// of a whole stage (1F1B: p).
//
// Usage: weft-bench-schedules [V]   (V: interleaved's chunks, default 2)
//
//===----------------------------------------------------------------------===//

#include "weft/Analysis/TaskOrder.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace weft;

int main(int argc, char **argv) {
  int64_t v = argc > 1 ? std::atoll(argv[1]) : 2;
  if (v < 2) {
    std::fprintf(stderr, "weft-bench-schedules: V must be at least 2\n");
    return 1;
  }
  std::printf("%-12s %3s %4s %9s %9s %12s %14s\n", "schedule", "p", "m",
              "bubble", "paper", "rank-0 idle", "rank-0 peak");
  for (int64_t p : {4, 8})
    for (int64_t m : {p, 2 * p, 4 * p, 8 * p})
      for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB,
                                ScheduleKind::Interleaved, ScheduleKind::ZBH1,
                                ScheduleKind::ZBH2, ScheduleKind::ZBV}) {
        std::string error;
        auto orders = rankTaskOrders(kind, p, m, v, &error);
        auto sim = orders.empty()
                       ? std::nullopt
                       : simulateTaskOrders(kind, p, orders,
                                            uniformStageTimes(kind, v), &error);
        if (!sim) {
          std::fprintf(stderr, "%s p=%lld m=%lld: %s\n",
                       scheduleName(kind).str().c_str(), (long long)p,
                       (long long)m, error.c_str());
          return 1;
        }
        // Closed forms: GPipe/1F1B (p-1)/(m+p-1), interleaved
        // (p-1)/(vm+p-1) (Narayanan et al. 2021); ZB-H1's rank-0 idle a
        // third of 1F1B's (Qi et al. 2024), i.e. (p-1)/(3m+p-1) of a
        // step of 3m units.
        std::string paper = "-";
        if (kind == ScheduleKind::GPipe || kind == ScheduleKind::OneFOneB)
          paper = std::to_string(double(p - 1) / (m + p - 1));
        else if (kind == ScheduleKind::Interleaved)
          paper = std::to_string(double(p - 1) / (v * m + p - 1));
        else if (kind == ScheduleKind::ZBH1)
          paper = std::to_string(double(p - 1) / (3 * m + p - 1));
        std::printf("%-12s %3lld %4lld %9.4f %9.9s %12.2f %14.2f\n",
                    scheduleName(kind).str().c_str(), (long long)p,
                    (long long)m, sim->bubbleFraction(), paper.c_str(),
                    sim->innerIdle[0],
                    double(sim->peakActivations[0]) / chunksPerRank(kind, v));
      }
  return 0;
}
