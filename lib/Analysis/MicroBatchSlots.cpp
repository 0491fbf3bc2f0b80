//===- MicroBatchSlots.cpp - a memory plan that repeats per micro-batch ---===//
//
// Placement by micro-batch slots (MemoryPlan.h): one scratch region every
// task instance's transients share, then slot groups each rotating some
// of the micro-batches' carried storages over K slots, then the program's
// storages around what those hold. The instances and micro-batches are placed
// by the greedy planner on their own storages, with lifetimes relative to
// their first step, so alike micro-batches get alike offsets and a plan
// can write their work once (docs/plan-format.md, "Task bodies").
//
//===----------------------------------------------------------------------===//

#include "MemoryPlacement.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <limits>
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

/// Carried storages matched across micro-batches: ordinal o's storage of
/// micro-batch m is `index[o][m]` (-1: that micro-batch has none). The j-th
/// storage of b bytes of each micro-batch (by first use) is one ordinal:
/// matching by size as well as order keeps a micro-batch that differs (the
/// last one's transfers) from shifting every later match onto storages of
/// other sizes, which would size the slots by the largest. Sorts each of
/// `carried`'s micro-batches by first use.
std::vector<std::vector<int>>
matchOrdinals(std::vector<std::vector<unsigned>> &carried,
              const std::vector<Storage> &storages) {
  std::vector<std::vector<int>> index;
  std::map<std::pair<int64_t, int>, size_t> ordinalOf;
  for (auto [m, group] : llvm::enumerate(carried)) {
    std::stable_sort(group.begin(), group.end(), [&](unsigned a, unsigned b) {
      return storages[a].start < storages[b].start;
    });
    llvm::SmallDenseMap<int64_t, int> ofSize;
    for (unsigned i : group) {
      auto [it, added] = ordinalOf.try_emplace(
          {storages[i].bytes, ofSize[storages[i].bytes]++}, index.size());
      if (added)
        index.emplace_back(carried.size(), -1);
      index[it->second][m] = i;
    }
  }
  return index;
}

/// Ordinals that rotate over one set of slots: a slot holds a micro-batch's
/// storages of all of them, packed by their lifetimes, `bytes` in all.
struct SlotDraft {
  int64_t count = 0;       ///< slots (slotCount of spans)
  std::vector<Span> spans; ///< by micro-batch, over the members
  std::vector<size_t> members;
  int64_t bytes = 0;
};

/// The spans of two drafts' members together.
std::vector<Span> unionSpans(const std::vector<Span> &a,
                             const std::vector<Span> &b) {
  std::vector<Span> spans(a.size());
  for (size_t m = 0; m < a.size(); ++m)
    spans[m] = {std::min(a[m].first, b[m].first),
                std::max(a[m].second, b[m].second)};
  return spans;
}

/// The ordinals in drafts that need no more slots together than each
/// alone (without bytes): an ordinal kept from the forward to the backward
/// and one living on after it may each need K slots where their union
/// needs more, every slot as large as both.
std::vector<SlotDraft> draftSlots(const std::vector<std::vector<int>> &index,
                                  const std::vector<Storage> &storages) {
  std::vector<SlotDraft> drafts;
  for (auto [o, copies] : llvm::enumerate(index)) {
    std::vector<Span> own;
    for (int i : copies)
      own.push_back(i < 0 ? Span{INT32_MAX, -1}
                          : Span{storages[i].start, storages[i].end});
    int64_t count = slotCount(own);
    std::vector<Span> joined;
    auto joins = llvm::find_if(drafts, [&](const SlotDraft &d) {
      if (d.count != count)
        return false;
      joined = unionSpans(d.spans, own);
      return slotCount(joined) == count;
    });
    if (joins == drafts.end()) {
      drafts.push_back({count, std::move(own), {o}});
      continue;
    }
    joins->spans = std::move(joined);
    joins->members.push_back(o);
  }
  return drafts;
}

/// `drafts` merged pairwise while a merge saves slot bytes, the largest
/// saving first: K' S' < K_a S_a + K_b S_b. Of a micro-batch's storages
/// kept from its forward to its backward and those its W tasks hold from
/// its backward on (a zero-bubble schedule), apart each needs fewer slots,
/// together they share a slot's bytes: which costs less depends on the
/// schedule. `slotBytes(draft)` gives a draft's slot bytes.
template <typename SlotBytes>
std::vector<SlotDraft> mergeSlots(std::vector<SlotDraft> drafts,
                                  SlotBytes slotBytes) {
  for (;;) {
    int64_t bestSaving = 0;
    size_t bestA = 0, bestB = 0;
    SlotDraft best;
    for (size_t a = 0; a < drafts.size(); ++a)
      for (size_t b = a + 1; b < drafts.size(); ++b) {
        const SlotDraft &x = drafts[a], &y = drafts[b];
        SlotDraft both{0, unionSpans(x.spans, y.spans), x.members};
        llvm::append_range(both.members, y.members);
        both.count = slotCount(both.spans);
        int64_t apart = x.count * x.bytes + y.count * y.bytes;
        // A slot holds at least the larger's: skip placing a merge that
        // cannot save more than the best so far.
        if (both.count * std::max(x.bytes, y.bytes) >= apart - bestSaving)
          continue;
        both.bytes = slotBytes(both);
        if (apart - both.count * both.bytes > bestSaving) {
          bestSaving = apart - both.count * both.bytes;
          bestA = a;
          bestB = b;
          best = std::move(both);
        }
      }
    if (bestSaving == 0)
      return drafts;
    drafts[bestA] = std::move(best);
    drafts.erase(drafts.begin() + bestB);
  }
}

/// `drafts` grouped by slot count alone (as before drafts existed): the
/// union of a count's drafts may need more slots, but where the
/// program's storages fit around the slots, fewer groups can pack better.
template <typename SlotBytes>
std::vector<SlotDraft> mergeByCount(const std::vector<SlotDraft> &drafts,
                                    SlotBytes slotBytes) {
  std::map<int64_t, SlotDraft> byCount;
  for (const SlotDraft &d : drafts) {
    auto [it, added] = byCount.try_emplace(d.count, d);
    if (added)
      continue;
    it->second.spans = unionSpans(it->second.spans, d.spans);
    llvm::append_range(it->second.members, d.members);
  }
  std::vector<SlotDraft> merged;
  for (auto &[count, d] : byCount) {
    d.count = slotCount(d.spans);
    d.bytes = slotBytes(d);
    merged.push_back(std::move(d));
  }
  return merged;
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
  // Carried storages, in slot groups. Three groupings: the ordinals that
  // share slots without needing more of them (drafts), those merged while
  // that saves slot bytes, and those grouped by slot count alone. The
  // first two count only the slots, not what the program's storages lose
  // in them (a group busy longer leaves them less room), so each is placed
  // (below) and the smallest arena kept.
  std::vector<std::vector<int>> index = matchOrdinals(carried, plan.storages);
  auto slotted = [&](const SlotDraft &d, int m) {
    std::vector<unsigned> indices;
    for (size_t o : d.members)
      if (index[o][m] >= 0)
        indices.push_back(index[o][m]);
    // In first-use order, as placeGroup's memo keys alike micro-batches.
    llvm::sort(indices, [&](unsigned a, unsigned b) {
      const Storage &x = plan.storages[a], &y = plan.storages[b];
      return x.start != y.start ? x.start < y.start : a < b;
    });
    return indices;
  };
  // (Measured on a copy: placeGroup sets the offsets it places.)
  std::vector<Storage> measured = plan.storages;
  auto slotBytes = [&](const SlotDraft &d) {
    int64_t bytes = 0;
    for (int m = 0; m < microBatches; ++m)
      bytes = std::max(bytes, placeGroup(measured, slotted(d, m), 0, memo));
    return aligned(bytes);
  };
  std::vector<SlotDraft> drafts = draftSlots(index, plan.storages);
  for (SlotDraft &d : drafts)
    d.bytes = slotBytes(d);

  // Places `groups`, then the program's storages around what the
  // micro-batches hold (what lives only before or after them, the
  // optimizer's, takes their bytes), into `storages` and `slots`; returns
  // the arena's top. `stacked`: each group's slots above the scratch
  // region and the groups before it; else each group's K slots as one
  // block live from its first micro-batch to its last, placed greedily
  // around the scratch blocks, so that a group idle while the largest
  // instance runs (the last micro-batch's activations, which GPipe's full
  // recompute keeps, while the first's backward recomputes) lies in the
  // bytes that instance's transients leave.
  auto place = [&](const std::vector<SlotDraft> &groups, bool stacked,
                   bool aroundStorages, std::vector<Storage> &storages,
                   std::vector<MemoryPlan::SlotGroup> &slots) {
    std::vector<int64_t> bases;
    int64_t base = scratch;
    for (const SlotDraft &d : groups) {
      bases.push_back(base);
      base += d.count * d.bytes;
    }
    if (!stacked) {
      std::vector<Storage> regions = blocks;
      for (const SlotDraft &d : groups) {
        Storage &region = regions.emplace_back();
        region.bytes = d.count * d.bytes;
        region.start = INT32_MAX;
        for (const Span &span : d.spans)
          if (span.first <= span.second) {
            region.start = std::min(region.start, span.first);
            region.end = std::max(region.end, span.second);
          }
      }
      weft::detail::placeGreedy(regions, plan.numSteps, blocks.size());
      for (auto [i, d] : llvm::enumerate(groups))
        bases[i] = regions[blocks.size() + i].offset;
    }
    std::vector<Storage> fixed =
        aroundStorages ? std::vector<Storage>{} : blocks;
    for (auto [d, base] : llvm::zip_equal(groups, bases)) {
      int group = slots.size();
      if (!aroundStorages)
        for (int64_t k = 0; k < d.count; ++k) {
          Storage &slot = fixed.emplace_back();
          slot.bytes = d.bytes;
          slot.offset = base + k * d.bytes;
          slot.start = INT32_MAX;
          for (int64_t m = k; m < microBatches; m += d.count) {
            slot.start = std::min(slot.start, d.spans[m].first);
            slot.end = std::max(slot.end, d.spans[m].second);
          }
        }
      for (int m = 0; m < microBatches; ++m) {
        std::vector<unsigned> indices = slotted(d, m);
        placeGroup(storages, indices, base + (m % d.count) * d.bytes, memo);
        for (unsigned i : indices)
          storages[i].slotGroup = group;
      }
      slots.push_back({d.count, d.bytes});
    }
    // `aroundStorages`: around the micro-batches' own storages (placed
    // above), so that a running sum or a bucket's piece born during a
    // backward takes the bytes of the kept activations that backward has
    // already freed; else around whole blocks (faster: a block per
    // instance, live while its transients are, and per slot, live while
    // its micro-batches' storages are).
    std::vector<Storage> all;
    for (const Storage &s : aroundStorages ? storages : fixed)
      if (s.bytes > 0 && s.start <= s.end &&
          (!aroundStorages || s.microBatch >= 0))
        all.push_back(s);
    size_t placed = all.size();
    for (unsigned i : program)
      all.push_back(storages[i]);
    int64_t top = weft::detail::placeGreedy(all, plan.numSteps, placed);
    for (auto [i, s] : llvm::zip_equal(program, llvm::drop_begin(all, placed)))
      storages[i].offset = s.offset;
    return top;
  };
  std::vector<SlotDraft> merged = mergeSlots(drafts, slotBytes),
                         byCount = mergeByCount(drafts, slotBytes);
  // The candidates (each grouping, its slots stacked or placed) are
  // compared with the program's storages around whole blocks; the best is
  // then placed around the storages themselves, kept if no larger. A merge
  // that found nothing to merge is the drafts again: not placed twice.
  std::vector<std::pair<const std::vector<SlotDraft> *, bool>> candidates = {
      {&drafts, true}, {&drafts, false}};
  if (merged.size() < drafts.size())
    candidates.insert(candidates.end(), {{&merged, false}, {&merged, true}});
  candidates.insert(candidates.end(), {{&byCount, false}, {&byCount, true}});
  std::vector<Storage> unplaced = plan.storages;
  int64_t top = std::numeric_limits<int64_t>::max();
  std::pair<const std::vector<SlotDraft> *, bool> best;
  for (auto [groups, stacked] : candidates) {
    std::vector<Storage> storages = unplaced;
    std::vector<MemoryPlan::SlotGroup> slots;
    int64_t arena = place(*groups, stacked, false, storages, slots);
    if (arena < top) {
      top = arena;
      best = {groups, stacked};
      plan.storages = std::move(storages);
      plan.slots = std::move(slots);
    }
  }
  std::vector<Storage> storages = std::move(unplaced);
  std::vector<MemoryPlan::SlotGroup> slots;
  if (place(*best.first, best.second, true, storages, slots) <= top) {
    plan.storages = std::move(storages);
    plan.slots = std::move(slots);
  }
  return true;
}
