//===- PlanOrder.cpp - the instruction order a plan must respect ----------===//
//
// checkInstructionOrder (Plan.h): per rank, what the executor would do
// wrong in silence; across ranks, what would hang. Run by parsePlan after
// the fields and the transfer pairing are checked.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Plan.h"

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
  std::set<int64_t> written;
  // Arguments of the step: filled before the first instruction (optimizer
  // state is zero at step 1).
  for (const BufferDesc &b : rank.buffers)
    if (b.kind != "activation")
      written.insert(b.id);
  for (const auto *list : {&rank.optimizerState, &rank.inputs})
    for (const NamedBuffer &n : *list)
      written.insert(n.buffer);
  auto isWritten = [&](int64_t id) {
    const BufferDesc &b = rank.buffers[id];
    return written.count(id) || (b.viewOf >= 0 && written.count(b.viewOf));
  };
  std::map<int64_t, InFlight> flying; // by tag
  std::map<int64_t, CollectiveInFlight> collectives; // by tag
  for (size_t i = 0; i < rank.instructions.size(); ++i) {
    const Instruction &inst = rank.instructions[i];
    if (isCollectiveWait(inst.op)) {
      auto it = collectives.find(inst.tag);
      if (it == collectives.end())
        throw Error(at(plan, rank.rank, i) + ": wait_collective of tag " +
                    std::to_string(inst.tag) +
                    ", which is not in flight on this rank");
      written.insert(it->second.output.buffer);
      for (int64_t id : inst.outputs)
        written.insert(id);
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
      flying[inst.tag] = {inst.tag, id, b.offset, b.offset + b.bytes, receive};
      continue;
    }
    if (inst.op == "wait_send" || inst.op == "wait_recv") {
      auto it = flying.find(inst.tag);
      if (it == flying.end())
        throw Error(at(plan, rank.rank, i) + ": " + inst.op + " of tag " +
                    std::to_string(inst.tag) + ", which is not in flight");
      if (it->second.receive != (inst.op == "wait_recv"))
        throw Error(at(plan, rank.rank, i) + ": " + inst.op + " of tag " +
                    std::to_string(inst.tag) + ", which is " +
                    (it->second.receive ? "a receive" : "a send"));
      if (it->second.receive)
        written.insert(it->second.buffer);
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
        written.insert(id);
    }
    if (isCollective(inst.op)) {
      auto range = [&](int64_t id) {
        const BufferDesc &b = rank.buffers[id];
        return InFlight{inst.tag, id, b.offset, b.offset + b.bytes, false};
      };
      if (!collectives
               .insert({inst.tag,
                        {inst.op, range(inst.inputs[0]),
                         range(inst.outputs[0])}})
               .second)
        throw Error(at(plan, rank.rank, i) + ": " + inst.op + " of tag " +
                    std::to_string(inst.tag) + " while the collective of "
                    "that tag is in flight");
    }
  }
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
void checkDeadlock(const Plan &plan) {
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
        if (isCollective(inst.op)) {
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
    checkRank(plan, rank);
  checkDeadlock(plan);
}

} // namespace weft::rt
