//===- PlanOrder.cpp - the instruction order a plan must respect ----------===//
//
// checkInstructionOrder (Plan.h): per rank, what the executor would do
// wrong in silence; across ranks, what would hang. Run by parsePlan after
// the fields and the transfer pairing are checked.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace weft::rt {

namespace {

std::string at(const Plan &plan, int64_t rank, size_t index) {
  return plan.path + ": " + plan.ranks[rank].instructionWhere(index);
}

/// A transfer between its post and its wait: its buffer's arena bytes.
struct InFlight {
  int64_t tag, buffer, begin, end;
  bool receive;
};

bool overlaps(const BufferDesc &b, const InFlight &f) {
  return b.bytes > 0 && b.offset < f.end && f.begin < b.offset + b.bytes;
}

/// A collective between its post and its wait_collective: it reads its
/// input's bytes and writes its output's.
struct CollectiveInFlight {
  std::string op;
  InFlight input, output;
};

/// One rank: a buffer read before anything wrote it, a buffer touched
/// while a transfer owns its bytes (a receive not yet complete is read or
/// written; a send not yet complete is overwritten), a wait of the wrong
/// kind, a transfer never waited for.
void checkRank(const Plan &plan, const RankPlan &rank) {
  // Per buffer id: written yet. Arguments of the step are filled before
  // the first instruction (optimizer state is zero at step 1).
  std::vector<char> written(rank.buffers.size(), 0);
  for (const BufferDesc &b : rank.buffers)
    if (b.kind != "activation")
      written[b.id] = 1;
  for (const auto *list : {&rank.optimizerState, &rank.inputs})
    for (const NamedBuffer &n : *list)
      written[n.buffer] = 1;
  auto isWritten = [&](int64_t id) {
    const BufferDesc &b = rank.buffers[id];
    return written[id] || (b.viewOf >= 0 && written[b.viewOf]);
  };
  // What is in flight, by tag: a handful at a time, looked up for every
  // operand of a GPT-3 stage's hundred thousand instructions (a vector,
  // not a map).
  std::vector<std::pair<int64_t, InFlight>> flying;
  std::vector<std::pair<int64_t, CollectiveInFlight>> collectives;
  auto find = [](auto &list, int64_t tag) {
    return std::find_if(list.begin(), list.end(),
                        [&](const auto &entry) { return entry.first == tag; });
  };
  for (size_t i = 0; i < rank.instructions.size(); ++i) {
    const Instruction &inst = rank.instructions[i];
    if (isCollectiveWait(inst.op)) {
      auto it = find(collectives, inst.tag);
      if (it == collectives.end())
        throw Error(at(plan, rank.rank, i) + ": wait_collective of tag " +
                    std::to_string(inst.tag) +
                    ", which is not in flight on this rank");
      written[it->second.output.buffer] = 1;
      for (int64_t id : inst.outputs)
        written[id] = 1;
      collectives.erase(it);
      continue;
    }
    if (inst.op == "isend" || inst.op == "irecv") {
      bool receive = inst.op == "irecv";
      int64_t id = receive ? inst.outputs[0] : inst.inputs[0];
      if (!receive && !isWritten(id))
        throw Error(at(plan, rank.rank, i) + ": sends buffer " +
                    std::to_string(id) + " before anything writes it");
      const BufferDesc &b = rank.buffers[id];
      InFlight f{inst.tag, id, b.offset, b.offset + b.bytes, receive};
      if (auto it = find(flying, inst.tag); it != flying.end())
        it->second = f;
      else
        flying.push_back({inst.tag, f});
      continue;
    }
    if (inst.op == "wait_send" || inst.op == "wait_recv") {
      auto it = find(flying, inst.tag);
      if (it == flying.end())
        throw Error(at(plan, rank.rank, i) + ": " + inst.op + " of tag " +
                    std::to_string(inst.tag) + ", which is not in flight");
      if (it->second.receive != (inst.op == "wait_recv"))
        throw Error(at(plan, rank.rank, i) + ": " + inst.op + " of tag " +
                    std::to_string(inst.tag) + ", which is " +
                    (it->second.receive ? "a receive" : "a send"));
      if (it->second.receive)
        written[it->second.buffer] = 1;
      flying.erase(it);
      continue;
    }
    // Compute and collectives read their inputs and write their outputs
    // (a collective's once its wait_collective has run).
    std::string what = isCollective(inst.op) ? inst.op : inst.kernel;
    for (int64_t id : inst.inputs) {
      for (const auto &[tag, f] : flying)
        if (f.receive && overlaps(rank.buffers[id], f))
          throw Error(at(plan, rank.rank, i) + " (" + what + " " +
                      inst.name + "): reads buffer " + std::to_string(id) +
                      " while the receive of tag " + std::to_string(tag) +
                      " into its bytes is in flight (no wait_recv before)");
      for (const auto &[tag, c] : collectives)
        if (overlaps(rank.buffers[id], c.output))
          throw Error(at(plan, rank.rank, i) + " (" + what + " " +
                      inst.name + "): reads buffer " + std::to_string(id) +
                      " while the " + c.op + " of tag " + std::to_string(tag) +
                      " into its bytes is in flight (no wait_collective "
                      "before)");
      if (!isWritten(id))
        throw Error(at(plan, rank.rank, i) + " (" + what + " " +
                    inst.name + "): reads buffer " + std::to_string(id) +
                    " before anything writes it");
    }
    for (int64_t id : inst.outputs) {
      for (const auto &[tag, f] : flying)
        if (overlaps(rank.buffers[id], f))
          throw Error(at(plan, rank.rank, i) + " (" + what + " " +
                      inst.name + "): writes buffer " + std::to_string(id) +
                      " while the " + (f.receive ? "receive" : "send") +
                      " of tag " + std::to_string(tag) +
                      " owns its bytes");
      for (const auto &[tag, c] : collectives)
        if (overlaps(rank.buffers[id], c.input) ||
            overlaps(rank.buffers[id], c.output))
          throw Error(at(plan, rank.rank, i) + " (" + what + " " +
                      inst.name + "): writes buffer " + std::to_string(id) +
                      " while the " + c.op + " of tag " +
                      std::to_string(tag) + " owns its bytes");
      if (!isCollective(inst.op))
        written[id] = 1;
    }
    if (isCollective(inst.op)) {
      auto range = [&](int64_t id) {
        const BufferDesc &b = rank.buffers[id];
        return InFlight{inst.tag, id, b.offset, b.offset + b.bytes, false};
      };
      if (find(collectives, inst.tag) != collectives.end())
        throw Error(at(plan, rank.rank, i) + ": " + inst.op + " of tag " +
                    std::to_string(inst.tag) + " while the collective of "
                    "that tag is in flight");
      collectives.push_back(
          {inst.tag, {inst.op, range(inst.inputs[0]), range(inst.outputs[0])}});
    }
  }
  // The lowest tag left in flight is named.
  std::sort(flying.begin(), flying.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  std::sort(collectives.begin(), collectives.end(),
            [](const auto &a, const auto &b) { return a.first < b.first; });
  if (!flying.empty())
    throw Error(plan.path + ": " + rank.where() + ": the transfer of tag " +
                std::to_string(flying.begin()->first) + " is never waited for");
  if (!collectives.empty())
    throw Error(plan.path + ": " + rank.where() + ": the " +
                collectives.begin()->second.op + " of tag " +
                std::to_string(collectives.begin()->first) +
                " is never waited for (no wait_collective)");
}

/// All ranks: a rendezvous simulation of the instruction lists. Posts never
/// block; a wait_send completes once its irecv is posted on the peer, a
/// wait_recv once its isend is (the strictest MPI semantics: no eager
/// buffering); a wait_collective once every rank of its group has posted
/// the collective (the groups' sequences match: checkMesh). If no rank can
/// move and some are not done, the plan would hang: the error names each
/// blocked rank's instruction.
///
/// A one-rank load's other ranks hold only their transfers: the simulation
/// then runs on every rank's transfers alone. Every group of the loaded
/// rank runs its program (loadPlan), so its members post their collectives
/// in one order; a hang through a collective would need members kept apart
/// by their transfers, which `weft-run --check` simulates in full (and
/// weft-run's --timeout ends at run time).
void checkDeadlock(const Plan &plan) {
  bool transfersOnly = plan.loadedRank >= 0;
  std::set<int64_t> sendPosted, recvPosted;
  // (axis, the members' other coordinates, position in the group's
  // sequence) -> members arrived. MPI matches a group's collectives by
  // their order on its communicator; tags only pair a rank's post and wait.
  using Key = std::tuple<std::string, std::vector<int64_t>, int64_t>;
  std::map<Key, int64_t> arrived;
  std::vector<size_t> pc(plan.ranks.size(), 0);
  // Per rank: its posts so far per axis, and the group key each tag
  // posted (a wait names only the tag).
  std::vector<std::map<std::string, int64_t>> count(plan.ranks.size());
  std::vector<std::map<int64_t, std::pair<Key, const Instruction *>>> posted(
      plan.ranks.size());
  for (bool moved = true; moved;) {
    moved = false;
    for (const RankPlan &rank : plan.ranks) {
      size_t &i = pc[rank.rank];
      for (; i < rank.instructions.size(); ++i) {
        const Instruction &inst = rank.instructions[i];
        if (transfersOnly &&
            (isCollective(inst.op) || isCollectiveWait(inst.op))) {
          // skipped: see checkDeadlock's comment
        } else if (isCollective(inst.op)) {
          Key key{inst.axis, plan.groupOf(rank, inst.axis),
                  count[rank.rank][inst.axis]++};
          ++arrived[key];
          posted[rank.rank][inst.tag] = {key, &inst};
        } else if (isCollectiveWait(inst.op)) {
          const auto &[key, post] = posted[rank.rank].at(inst.tag);
          if (arrived[key] < plan.axisSize(post->axis))
            break;
        } else if (inst.op == "isend") {
          sendPosted.insert(inst.tag);
        } else if (inst.op == "irecv") {
          recvPosted.insert(inst.tag);
        } else if ((inst.op == "wait_send" && !recvPosted.count(inst.tag)) ||
                   (inst.op == "wait_recv" && !sendPosted.count(inst.tag))) {
          break;
        }
        moved = true;
      }
    }
  }
  std::string blocked;
  for (const RankPlan &rank : plan.ranks)
    if (pc[rank.rank] < rank.instructions.size())
      blocked += (blocked.empty() ? "" : "; ") +
                 rank.instructionWhere(pc[rank.rank]) + " (" +
                 rank.instructions[pc[rank.rank]].op + " tag " +
                 std::to_string(rank.instructions[pc[rank.rank]].tag) + ")";
  if (!blocked.empty())
    throw Error(plan.path + ": the ranks would deadlock, each waiting on "
                "another: " + blocked);
}

} // namespace

void checkInstructionOrder(const Plan &plan) {
  for (const RankPlan &rank : plan.ranks)
    if (rank.complete)
      checkRank(plan, rank);
  checkDeadlock(plan);
}

} // namespace weft::rt
