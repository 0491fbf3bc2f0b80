//===- MicroBatchSlots.cpp - a memory plan that repeats per micro-batch ---===//
//
// Placement by micro-batch slots (MemoryPlan.h): one scratch region every
// task instance's transients share, then slot groups each rotating one kind
// of the micro-batches' carried storages over K slots, then the program's
// storages around those blocks. The instances and micro-batches are placed
// by the greedy planner on their own storages, with lifetimes relative to
// their first step, so alike micro-batches get alike offsets and a plan
// can write their work once (docs/plan-format.md, "Task bodies").
//
//===----------------------------------------------------------------------===//

#include "MemoryPlacement.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace weft;

namespace {

int64_t aligned(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// Which micro-batch and task instance the ops touching a storage work on.
struct Touch {
  static constexpr int kNone = -2; ///< no op touched it yet
  int microBatch = kNone;          ///< -1: several, or an op without one
  int instance = -1;               ///< the first instance touching it
  bool oneInstance = true;

  void add(int mb, int inst) {
    if (microBatch == kNone) {
      microBatch = mb;
      instance = inst;
      return;
    }
    if (microBatch != mb)
      microBatch = -1;
    oneInstance &= instance == inst;
  }
};

/// Placements made, by the group's shifted lifetimes and sizes: task
/// instances of one body (each micro-batch's forward, ...) have alike
/// groups, so the greedy placement runs once per distinct task, not once
/// per micro-batch (placeGreedy reads only start, end and bytes).
using PlacementMemo =
    std::map<std::vector<int64_t>, std::pair<std::vector<int64_t>, int64_t>>;

/// Places `indices` of `storages` greedily with lifetimes shifted by
/// -`first` (so alike groups place alike), at `base`; returns the region's
/// top (max offset + bytes, relative to base).
int64_t placeGroup(std::vector<Storage> &storages,
                   const std::vector<unsigned> &indices, int64_t base,
                   PlacementMemo &memo) {
  if (indices.empty())
    return 0;
  int first = INT32_MAX, last = 0;
  for (unsigned i : indices) {
    first = std::min(first, storages[i].start);
    last = std::max(last, storages[i].end);
  }
  std::vector<int64_t> key;
  key.reserve(3 * indices.size());
  for (unsigned i : indices)
    key.insert(key.end(), {storages[i].start - first, storages[i].end - first,
                           storages[i].bytes});
  auto [it, added] = memo.try_emplace(std::move(key));
  auto &[offsets, top] = it->second;
  if (added) {
    std::vector<Storage> group;
    group.reserve(indices.size());
    for (unsigned i : indices) {
      Storage s = storages[i];
      s.start -= first;
      s.end -= first;
      group.push_back(s);
    }
    top = weft::detail::placeGreedy(group, last - first + 1);
    for (const Storage &s : group)
      offsets.push_back(s.offset);
  }
  for (auto [i, offset] : llvm::zip_equal(indices, offsets))
    storages[i].offset = base + offset;
  return top;
}

/// A span of steps: a micro-batch's carried storages of one group, first
/// step to last; empty when first > last.
using Span = std::pair<int, int>;

/// The fewest slots K such that micro-batches m and m' with m = m' mod K
/// are never live together (`spans`, by micro-batch). Starts from the most
/// live at once, which suffices when micro-batches start and finish in
/// order (every schedule weft writes); checks it, adding slots until it
/// holds (at most one per micro-batch).
int64_t slotCount(const std::vector<Span> &spans) {
  std::vector<std::pair<int, int>> events; // (step, +1 start / -1 after end)
  for (const Span &s : spans)
    if (s.first <= s.second) {
      events.push_back({s.first, 1});
      events.push_back({s.second + 1, -1});
    }
  std::sort(events.begin(), events.end(), [](auto a, auto b) {
    return a.first != b.first ? a.first < b.first : a.second < b.second;
  });
  int64_t live = 0, most = 1;
  for (auto [step, delta] : events)
    most = std::max(most, live += delta);
  int64_t count = spans.size();
  for (int64_t k = most; k < count; ++k) {
    bool disjoint = true;
    for (int64_t residue = 0; residue < k && disjoint; ++residue) {
      std::vector<Span> sharing;
      for (int64_t m = residue; m < count; m += k)
        if (spans[m].first <= spans[m].second)
          sharing.push_back(spans[m]);
      std::sort(sharing.begin(), sharing.end());
      for (size_t i = 1; i < sharing.size() && disjoint; ++i)
        disjoint = sharing[i - 1].second < sharing[i].first;
    }
    if (disjoint)
      return k;
  }
  return std::max<int64_t>(count, 1);
}

} // namespace

bool weft::detail::placeBySlots(MemoryPlan &plan, func::FuncOp func) {
  Block &body = func.getBody().front();
  std::vector<Touch> touches(plan.storages.size());
  // Task instances: maximal runs of ops of one task kind and micro-batch.
  int instance = -1, microBatches = 0;
  llvm::SmallDenseSet<int64_t, 8> seen; // the micro-batches it runs
  std::optional<std::pair<TaskKind, std::optional<int64_t>>> runKey;
  for (Operation &op : body.without_terminator()) {
    std::optional<int64_t> mb = microBatchWorkedOn(&op);
    std::pair<TaskKind, std::optional<int64_t>> key{scheduledTaskKind(&op), mb};
    if (key != runKey) {
      runKey = key;
      ++instance;
    }
    microBatches = std::max<int>(microBatches, mb.value_or(0) + 1);
    if (mb)
      seen.insert(*mb);
    auto touch = [&](Value v) {
      if (isa<RankedTensorType>(v.getType()))
        touches[plan.storageOf.lookup(v)].add(mb ? int(*mb) : -1, instance);
    };
    for (Value v : op.getOperands())
      touch(v);
    for (Value v : op.getResults())
      touch(v);
  }
  if (seen.size() < 2)
    return false;
  for (Value result : body.getTerminator()->getOperands())
    touches[plan.storageOf.lookup(result)].microBatch = -1;

  // Arguments and constants are the program's whoever reads them.
  std::vector<unsigned> program;
  std::vector<std::vector<unsigned>> transient(instance + 1),
      carried(microBatches);
  for (auto [i, s] : llvm::enumerate(plan.storages)) {
    const Touch &t = touches[i];
    if (s.kind != BufferKind::Activation || t.microBatch < 0) {
      program.push_back(i);
      continue;
    }
    s.microBatch = t.microBatch;
    if (!t.oneInstance)
      carried[s.microBatch].push_back(i);
    else
      transient[t.instance].push_back(i);
  }

  // The scratch region first, from 0: every instance's transients from
  // its base, each instance a block live from its first transient to its
  // last (what else lives then goes above it).
  std::vector<Storage> blocks;
  int64_t scratch = 0;
  PlacementMemo memo;
  for (const std::vector<unsigned> &group : transient) {
    if (group.empty())
      continue;
    Storage block;
    block.bytes = aligned(placeGroup(plan.storages, group, 0, memo));
    block.start = INT32_MAX;
    for (unsigned i : group) {
      block.start = std::min(block.start, plan.storages[i].start);
      block.end = std::max(block.end, plan.storages[i].end);
    }
    scratch = std::max(scratch, block.bytes);
    blocks.push_back(block);
  }
  // Carried storages: the i-th of each micro-batch (by first use) needs as
  // many slots as its instances are live at once; those needing alike
  // counts form a group with its own slots, above the scratch region.
  const std::vector<Storage> &storages = plan.storages;
  size_t ordinals = 0;
  for (std::vector<unsigned> &group : carried) {
    std::stable_sort(group.begin(), group.end(), [&](unsigned a, unsigned b) {
      return storages[a].start < storages[b].start;
    });
    ordinals = std::max(ordinals, group.size());
  }
  std::map<int64_t, std::vector<size_t>> byCount;
  for (size_t i = 0; i < ordinals; ++i) {
    std::vector<Span> spans(microBatches, {INT32_MAX, -1});
    for (auto [m, group] : llvm::enumerate(carried))
      if (i < group.size())
        spans[m] = {storages[group[i]].start, storages[group[i]].end};
    byCount[slotCount(spans)].push_back(i);
  }
  int64_t base = scratch;
  for (auto &[count, members] : byCount) {
    int group = plan.slots.size();
    std::vector<std::vector<unsigned>> slotted(microBatches);
    std::vector<Span> spans(microBatches, {INT32_MAX, -1});
    int64_t bytes = 0;
    for (auto [m, all] : llvm::enumerate(carried)) {
      for (size_t i : members)
        if (i < all.size()) {
          const Storage &s = storages[all[i]];
          slotted[m].push_back(all[i]);
          spans[m] = {std::min(spans[m].first, s.start),
                      std::max(spans[m].second, s.end)};
        }
      bytes = std::max(bytes, placeGroup(plan.storages, slotted[m], 0, memo));
    }
    // The group's spans may need more slots than each member alone.
    MemoryPlan::SlotGroup slots{slotCount(spans), aligned(bytes)};
    for (int64_t k = 0; k < slots.count; ++k) {
      Storage slot;
      slot.bytes = slots.bytes;
      slot.offset = base + k * slots.bytes;
      slot.start = INT32_MAX;
      for (int64_t m = k; m < microBatches; m += slots.count) {
        slot.start = std::min(slot.start, spans[m].first);
        slot.end = std::max(slot.end, spans[m].second);
      }
      blocks.push_back(slot);
    }
    for (auto [m, indices] : llvm::enumerate(slotted))
      for (unsigned i : indices) {
        Storage &s = plan.storages[i];
        s.slotGroup = group;
        s.offset += base + int64_t(m % slots.count) * slots.bytes;
      }
    plan.slots.push_back(slots);
    base += slots.count * slots.bytes;
  }
  // The program's storages last, around the scratch region and the slots
  // (each a fixed block live while any of its storages is): what lives
  // only before or after the micro-batches (the optimizer's) takes their
  // bytes.
  std::vector<Storage> all;
  for (const Storage &block : blocks)
    if (block.bytes > 0 && block.start <= block.end)
      all.push_back(block);
  size_t fixed = all.size();
  for (unsigned i : program)
    all.push_back(plan.storages[i]);
  weft::detail::placeGreedy(all, plan.numSteps, fixed);
  for (auto [i, s] : llvm::zip_equal(program, llvm::drop_begin(all, fixed)))
    plan.storages[i].offset = s.offset;
  return true;
}
