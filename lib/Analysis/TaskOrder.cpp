//===- TaskOrder.cpp - each rank's pipeline task order, simulated ---------===//

#include "weft/Analysis/TaskOrder.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace weft;

std::string OrderedTask::label() const {
  return std::string(1, taskKindLetter(kind)) + std::to_string(chunk) + "." +
         std::to_string(microBatch);
}

int64_t weft::chunksPerRank(ScheduleKind kind, int64_t virtualStages) {
  if (kind == ScheduleKind::Interleaved)
    return virtualStages;
  return kind == ScheduleKind::ZBV ? 2 : 1;
}

bool weft::splitsWeightGradient(ScheduleKind kind) {
  return kind == ScheduleKind::ZBH1 || kind == ScheduleKind::ZBH2 ||
         kind == ScheduleKind::ZBV;
}

int64_t weft::chunkStage(ScheduleKind kind, int64_t ranks, int64_t rank,
                         int64_t chunk) {
  if (kind == ScheduleKind::ZBV)
    return chunk == 0 ? rank : 2 * ranks - 1 - rank;
  return chunk * ranks + rank;
}

std::vector<double> weft::rankLoads(ScheduleKind kind, int64_t ranks,
                                    int64_t virtualStages,
                                    const std::vector<double> &stageScale) {
  std::vector<double> loads(ranks, 1.0);
  if (stageScale.empty())
    return loads;
  int64_t perRank = chunksPerRank(kind, virtualStages);
  for (int64_t r = 0; r < ranks; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < perRank; ++c)
      sum += stageScale[chunkStage(kind, ranks, r, c)];
    loads[r] = sum / double(perRank);
  }
  return loads;
}

namespace {

using Order = std::vector<OrderedTask>;

OrderedTask F(int64_t chunk, int64_t mb) {
  return {TaskKind::Forward, chunk, mb};
}
OrderedTask B(int64_t chunk, int64_t mb) {
  return {TaskKind::Backward, chunk, mb};
}
OrderedTask W(int64_t chunk, int64_t mb) {
  return {TaskKind::Weight, chunk, mb};
}

/// Megatron's interleaved 1F1B with micro-batch groups of P.
Order interleaved(int64_t p, int64_t r, int64_t m, int64_t v) {
  int64_t total = m * v;
  int64_t warmup = std::min(2 * (p - 1 - r) + (v - 1) * p, total);
  auto task = [&](int64_t k, bool backward) {
    int64_t inGroup = k % (p * v), chunk = inGroup / p;
    int64_t mb = k / (p * v) * p + k % p;
    return backward ? B(v - 1 - chunk, mb) : F(chunk, mb);
  };
  Order order;
  for (int64_t k = 0; k < warmup; ++k)
    order.push_back(task(k, false));
  for (int64_t k = 0; k < total - warmup; ++k) {
    order.push_back(task(warmup + k, false));
    order.push_back(task(k, true));
  }
  for (int64_t k = total - warmup; k < total; ++k)
    order.push_back(task(k, true));
  return order;
}

/// ZB-H1 (`lag` = r, warm-up P-1-r, F before B) and ZB-H2 (`lag` = 2r,
/// warm-up 2(P-1-r)+1, B before F): 1F1B's shape with W(j) right after
/// B(j + lag) and the last `lag` W's at the end.
Order zeroBubbleH(int64_t warmup, int64_t lag, int64_t m, bool forwardFirst) {
  warmup = std::min(warmup, m);
  Order order;
  for (int64_t i = 0; i < warmup; ++i)
    order.push_back(F(0, i));
  int64_t w = 0;
  for (int64_t i = 0; i < m; ++i) {
    bool forward = warmup + i < m;
    if (forward && forwardFirst)
      order.push_back(F(0, warmup + i));
    order.push_back(B(0, i));
    if (i >= lag)
      order.push_back(W(0, w++));
    if (forward && !forwardFirst)
      order.push_back(F(0, warmup + i));
  }
  while (w < m)
    order.push_back(W(0, w++));
  return order;
}

/// ZB-V: chunk 0 runs stage r, chunk 1 stage 2P-1-r. The order of torch's
/// ScheduleZBVZeroBubble over max(2P-1, M) micro-batches, those past M
/// dropped (its idle slots).
Order zeroBubbleV(int64_t p, int64_t r, int64_t m) {
  int64_t n = std::max(2 * p - 1, m);
  int64_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
  Order order;
  for (int64_t k = 0; k < 2 * (p - r) - 1; ++k)
    order.push_back(F(0, f0++));
  for (int64_t k = 0; k < r; ++k) {
    order.push_back(F(1, f1++));
    order.push_back(F(0, f0++));
  }
  for (int64_t k = 0; k < p - r; ++k) {
    order.push_back(F(1, f1++));
    order.push_back(B(1, b1));
    order.push_back(W(1, b1++));
  }
  while (f1 < f0 || f0 < n) {
    if (f0 < n)
      order.push_back(F(0, f0++));
    order.push_back(B(0, b0));
    order.push_back(W(0, b0++));
    order.push_back(F(1, f1++));
    order.push_back(B(1, b1));
    order.push_back(W(1, b1++));
  }
  int64_t w0 = b0, w1 = b1;
  for (int64_t k = 0; k < r; ++k) {
    order.push_back(B(0, b0++));
    order.push_back(B(1, b1++));
  }
  for (int64_t k = 0; k < p - r; ++k) {
    order.push_back(B(0, b0++));
    order.push_back(W(0, w0++));
  }
  while (w1 < b1)
    order.push_back(W(1, w1++));
  while (w0 < b0)
    order.push_back(W(0, w0++));
  llvm::erase_if(order,
                 [&](const OrderedTask &t) { return t.microBatch >= m; });
  return order;
}

} // namespace

std::vector<std::vector<OrderedTask>>
weft::rankTaskOrders(ScheduleKind kind, int64_t ranks, int64_t microBatches,
                     int64_t virtualStages, std::string *error) {
  int64_t p = ranks, m = microBatches;
  if (p < 1 || m < 1) {
    *error = "a pipeline needs at least one rank and one micro-batch";
    return {};
  }
  if (kind == ScheduleKind::Interleaved) {
    if (virtualStages < 2) {
      *error = "the interleaved schedule needs at least 2 model chunks per "
               "rank (--virtual-stages), got " +
               std::to_string(virtualStages);
      return {};
    }
    if (m % p != 0) {
      *error = "the interleaved schedule runs micro-batches in groups of the "
               "pipeline's " +
               std::to_string(p) + " ranks: " + std::to_string(m) +
               " micro-batches is not a multiple of " + std::to_string(p);
      return {};
    }
  }
  std::vector<Order> orders(p);
  for (int64_t r = 0; r < p; ++r) {
    Order &order = orders[r];
    switch (kind) {
    case ScheduleKind::GPipe:
    case ScheduleKind::OneFOneB:
      for (const StageTask &t : stageTasks(kind, r, p, m))
        order.push_back(t.backward ? B(0, t.microBatch) : F(0, t.microBatch));
      break;
    case ScheduleKind::Interleaved:
      order = interleaved(p, r, m, virtualStages);
      break;
    case ScheduleKind::ZBH1:
      order = zeroBubbleH(p - 1 - r, r, m, /*forwardFirst=*/true);
      break;
    case ScheduleKind::ZBH2:
      order = zeroBubbleH(2 * (p - 1 - r) + 1, 2 * r, m,
                          /*forwardFirst=*/false);
      break;
    case ScheduleKind::ZBV:
      order = zeroBubbleV(p, r, m);
      break;
    }
  }
  return orders;
}

TaskTimes weft::uniformStageTimes(ScheduleKind kind, int64_t virtualStages) {
  double t = 1.0 / chunksPerRank(kind, virtualStages);
  return {t, t, t, 0};
}

double weft::uniformBubbleFraction(ScheduleKind kind, int64_t ranks,
                                   int64_t microBatches,
                                   int64_t virtualStages) {
  std::string error;
  std::vector<std::vector<OrderedTask>> orders =
      rankTaskOrders(kind, ranks, microBatches, virtualStages, &error);
  std::optional<TaskOrderSimulation> sim =
      orders.empty()
          ? std::nullopt
          : simulateTaskOrders(kind, ranks, orders,
                               uniformStageTimes(kind, virtualStages), &error);
  return sim ? sim->bubbleFraction() : std::nan("");
}

double TaskOrderSimulation::bubbleFraction() const {
  double sum = 0;
  for (double b : busy)
    sum += b;
  return makespan > 0 ? 1 - sum / (busy.size() * makespan) : 0;
}

std::optional<TaskOrderSimulation>
weft::simulateTaskOrders(ScheduleKind kind, int64_t ranks,
                         const std::vector<std::vector<OrderedTask>> &orders,
                         const TaskTimes &times, std::string *error) {
  bool split = splitsWeightGradient(kind);
  if (int64_t(orders.size()) != ranks) {
    *error = std::to_string(orders.size()) + " task orders for " +
             std::to_string(ranks) + " ranks";
    return std::nullopt;
  }
  // The rank of each stage; -1: none yet.
  std::vector<int64_t> rankOfStage;
  int64_t microBatches = 0;
  for (int64_t r = 0; r < ranks; ++r)
    for (const OrderedTask &t : orders[r]) {
      int64_t s = chunkStage(kind, ranks, r, t.chunk);
      if (s < 0 || t.microBatch < 0) {
        *error = "task " + t.label() + " of rank " + std::to_string(r) +
                 " has a negative chunk or micro-batch";
        return std::nullopt;
      }
      if (s >= int64_t(rankOfStage.size()))
        rankOfStage.resize(s + 1, -1);
      rankOfStage[s] = r;
      microBatches = std::max(microBatches, t.microBatch + 1);
    }
  int64_t stages = rankOfStage.size();
  for (int64_t s = 0; s < stages; ++s)
    if (rankOfStage[s] < 0) {
      *error = "no rank runs stage " + std::to_string(s);
      return std::nullopt;
    }
  if (!times.stageScale.empty() && int64_t(times.stageScale.size()) != stages) {
    *error = std::to_string(times.stageScale.size()) + " stage scales for " +
             std::to_string(stages) + " stages";
    return std::nullopt;
  }
  auto scale = [&](int64_t stage) {
    return times.stageScale.empty() ? 1.0 : times.stageScale[stage];
  };
  for (const auto &order : orders)
    for (const OrderedTask &t : order)
      if (t.kind != TaskKind::Forward && t.kind != TaskKind::Backward &&
          (t.kind != TaskKind::Weight || !split)) {
        *error = "task " + t.label() + " in a schedule of F and B" +
                 std::string(split ? " and W" : "") + " tasks";
        return std::nullopt;
      }
  // End time of each (kind, stage, micro-batch) run so far; NaN: not yet.
  // A flat table: a search simulates orders of 10^5 tasks thousands of
  // times.
  auto kindIndex = [](TaskKind k) {
    return k == TaskKind::Forward ? 0 : k == TaskKind::Backward ? 1 : 2;
  };
  std::vector<double> ended(3 * stages * microBatches,
                            std::numeric_limits<double>::quiet_NaN());
  auto endedAt = [&](TaskKind k, int64_t stage, int64_t mb) -> double & {
    return ended[(kindIndex(k) * stages + stage) * microBatches + mb];
  };

  std::vector<size_t> next(ranks, 0);
  std::vector<double> freeAt(ranks, 0);
  TaskOrderSimulation sim;
  sim.busy.assign(ranks, 0);
  sim.innerIdle.assign(ranks, 0);
  // Per rank, (time, +1 or -1) of each chunk activation held.
  std::vector<std::vector<std::pair<double, int>>> held(ranks);

  auto readyAt = [&](int64_t r, TaskKind k, int64_t stage, int64_t mb,
                     double &at) {
    double end = endedAt(k, stage, mb);
    if (std::isnan(end))
      return false;
    bool remote = rankOfStage[stage] != r;
    at = std::max(at, end + (remote ? times.transfer : 0));
    return true;
  };
  size_t remaining = 0;
  for (const auto &order : orders)
    remaining += order.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t r = 0; r < ranks; ++r) {
      while (next[r] < orders[r].size()) {
        const OrderedTask &t = orders[r][next[r]];
        int64_t s = chunkStage(kind, ranks, r, t.chunk);
        double start = freeAt[r], duration = 0;
        bool ready = true;
        switch (t.kind) {
        case TaskKind::Forward:
          ready = s == 0 ||
                  readyAt(r, TaskKind::Forward, s - 1, t.microBatch, start);
          duration = times.forward;
          break;
        case TaskKind::Backward:
          ready = readyAt(r, TaskKind::Forward, s, t.microBatch, start) &&
                  (s == stages - 1 ||
                   readyAt(r, TaskKind::Backward, s + 1, t.microBatch, start));
          duration = times.backward + (split ? 0 : times.weight);
          break;
        default:
          ready = readyAt(r, TaskKind::Backward, s, t.microBatch, start);
          duration = times.weight;
          break;
        }
        if (!ready)
          break;
        duration *= scale(s);
        double end = start + duration;
        if (next[r] > 0) // idle before the first task is no inner idle
          sim.innerIdle[r] += start - freeAt[r];
        sim.busy[r] += duration;
        freeAt[r] = end;
        endedAt(t.kind, s, t.microBatch) = end;
        if (t.kind == TaskKind::Forward)
          held[r].push_back({start, +1});
        if (t.kind == (split ? TaskKind::Weight : TaskKind::Backward))
          held[r].push_back({end, -1});
        sim.makespan = std::max(sim.makespan, end);
        ++next[r];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      *error = "deadlock:";
      for (int64_t r = 0; r < ranks; ++r)
        if (next[r] < orders[r].size())
          *error += " rank " + std::to_string(r) + " waits at " +
                    orders[r][next[r]].label() + ";";
      error->pop_back();
      return std::nullopt;
    }
  }
  for (auto &events : held) {
    // A release and an acquisition at one time do not overlap.
    llvm::sort(events);
    int64_t now = 0, peak = 0;
    for (auto &[time, delta] : events)
      peak = std::max(peak, now += delta);
    sim.peakActivations.push_back(peak);
  }
  return sim;
}
