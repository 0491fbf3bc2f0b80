//===- PlanMesh.cpp - the plan loader's checks across ranks ---------------===//
//
// Transfers pair up between ranks; the rank count, sub-axes, shards and
// collective groups agree with the mesh (Plan.cpp parses; this checks the
// whole).
//
//===----------------------------------------------------------------------===//

#include "PlanField.h"

#include "weft/runtime/Shard.h"

#include <algorithm>
#include <map>
#include <set>

using json = nlohmann::json;

namespace weft::rt::detail {

void checkTransfers(const Plan &plan, const std::vector<Field> &ranks) {
  struct Side {
    int64_t rank = -1, peer = -1, bytes = 0;
    size_t index = 0;
  };
  std::map<int64_t, Side> sends, recvs;
  // Per channel (sender, receiver): the (tag, instruction) of its isends on
  // the sender and of its irecvs on the receiver, in program order.
  using Posts = std::vector<std::pair<int64_t, size_t>>;
  std::map<std::pair<int64_t, int64_t>, Posts> sent, received;
  int64_t n = plan.ranks.size();
  for (const RankPlan &rank : plan.ranks) {
    std::set<int64_t> posted;
    for (size_t i = 0; i < rank.instructions.size(); ++i) {
      const Instruction &inst = rank.instructions[i];
      if (!isTransfer(inst.op))
        continue;
      // Written out (a lazy program's instance) only for a message.
      auto field = [&] {
        return originField(ranks[rank.rank], rank, "instructions", i);
      };
      if (inst.op == "isend" || inst.op == "irecv") {
        if (inst.peer >= n || inst.peer == rank.rank)
          field().at("peer").fail("peer " + std::to_string(inst.peer) +
                                  " is not another rank of this " +
                                  std::to_string(n) + "-rank plan");
        auto &sides = inst.op == "isend" ? sends : recvs;
        if (!sides.insert({inst.tag, {rank.rank, inst.peer, inst.bytes, i}})
                 .second)
          field().at("tag").fail("tag " + std::to_string(inst.tag) +
                                 " is posted twice");
        posted.insert(inst.tag);
        if (inst.op == "isend")
          sent[{rank.rank, inst.peer}].push_back({inst.tag, i});
        else
          received[{inst.peer, rank.rank}].push_back({inst.tag, i});
      } else if (!posted.count(inst.tag)) {
        field().at("tag").fail(inst.op + " of tag " + std::to_string(inst.tag) +
                               " before its transfer is posted on this rank");
      }
    }
  }
  for (const auto &[tag, send] : sends) {
    auto it = recvs.find(tag);
    auto field = [&] {
      return originField(ranks[send.rank], plan.ranks[send.rank],
                         "instructions", send.index);
    };
    if (it == recvs.end() || it->second.rank != send.peer ||
        it->second.peer != send.rank)
      field().at("tag").fail("no irecv of tag " + std::to_string(tag) +
                             " on rank " + std::to_string(send.peer) +
                             " from rank " + std::to_string(send.rank));
    if (it->second.bytes != send.bytes)
      field().at("tag").fail("sends " + std::to_string(send.bytes) +
                             " bytes, the irecv on rank " +
                             std::to_string(send.peer) + " expects " +
                             std::to_string(it->second.bytes));
  }
  for (const auto &[tag, recv] : recvs)
    if (!sends.count(tag))
      originField(ranks[recv.rank], plan.ranks[recv.rank], "instructions",
                  recv.index)
          .at("tag")
          .fail("no isend of tag " + std::to_string(tag) + " on rank " +
                std::to_string(recv.peer));
  // One order per channel: NCCL matches a pair's sends and receives by
  // their order, not by tag, so the n-th isend from a to b must be b's n-th
  // irecv from a (MPI would match them either way; the plan is the same
  // contract on every backend). The pairing above gives both ends of a
  // channel as many transfers.
  for (const auto &[channel, posts] : sent) {
    const Posts &gets = received[channel];
    for (size_t n = 0; n < posts.size(); ++n)
      if (gets[n].first != posts[n].first)
        originField(ranks[channel.first], plan.ranks[channel.first],
                    "instructions", posts[n].second)
            .at("tag")
            .fail("tag " + std::to_string(posts[n].first) + " is rank " +
                  std::to_string(channel.first) + "'s send #" +
                  std::to_string(n) + " to rank " +
                  std::to_string(channel.second) + ", whose receive #" +
                  std::to_string(n) + " from it is tag " +
                  std::to_string(gets[n].first) +
                  ": a pair of ranks must post its transfers in one order "
                  "at both ends (NCCL matches them by order)");
  }
}

/// The mesh: one rank per device (each placed at its row-major
/// coordinates by the loader); collectives over an axis of it, the same
/// sequence (kind, tag, bytes) on every rank of a group, so that MPI matches
/// them; parameter shards split over the tensor axis at the rank's coordinate.
void checkMesh(const Plan &plan, const Field &root,
               const std::vector<Field> &ranks) {
  int64_t devices = 1, tensorSize = plan.axisSize("tensor");
  std::set<std::string> names;
  for (const auto &[name, size] : plan.meshAxes) {
    if (size < 1 || !names.insert(name).second)
      root.at("mesh").fail(
          "the mesh's axes must have distinct names and sizes >= 1");
    if (__builtin_mul_overflow(devices, size, &devices))
      devices = INT64_MAX;
  }
  if (devices != int64_t(plan.ranks.size()))
    root.at("rank_programs")
        .fail(std::to_string(plan.ranks.size()) + " ranks for a mesh of " +
              std::to_string(devices) + " devices");
  // Sub-axes factor an axis: size x stride divides it (a stride-1 factor
  // of S and a stride-S factor of n / S split it in two).
  std::vector<std::string> axisNames;
  for (const auto &[name, size] : plan.meshAxes)
    axisNames.push_back(name);
  for (size_t i = 0; i < plan.subAxes.size(); ++i) {
    const SubAxis &sub = plan.subAxes[i];
    int64_t of = plan.axisSize(sub.of);
    if (!names.count(sub.of) || sub.size < 1 || sub.stride < 1 ||
        sub.size > of || sub.stride > of || of % (sub.size * sub.stride))
      root.at("mesh")
          .at("sub_axes")
          .at(i)
          .fail("'" + sub.name + "': " + std::to_string(sub.size) +
                " ranks at stride " + std::to_string(sub.stride) +
                " do not factor mesh axis '" + sub.of + "'");
    if (!names.insert(sub.name).second)
      root.at("mesh")
          .at("sub_axes")
          .at(i)
          .fail("'" + sub.name + "': the name of another axis");
    axisNames.push_back(sub.name);
  }
  struct Collective {
    std::string op;
    int64_t tag, bytes;
  };
  std::map<std::pair<std::string, std::vector<int64_t>>,
           std::pair<int64_t, std::vector<Collective>>>
      groups; // (axis, group) -> (first member, its sequence)
  for (const RankPlan &rank : plan.ranks) {
    // A rank's coordinates come from the mesh (the loader places it).
    Field field = ranks[rank.rank];
    // Tensor-parallel slices are over the tensor axis, ZeRO's pieces over
    // the data axis or its groups (parameters and their optimizer state
    // alike).
    int64_t dataSize = plan.axisSize("data");
    std::string zero = plan.zeroAxis();
    int64_t pieces = plan.axisSize(zero), piece = plan.coord(rank, zero);
    for (const char *list : {"params", "optimizer_state"}) {
      const std::vector<NamedBuffer> &named =
          std::string(list) == "params" ? rank.params : rank.optimizerState;
      for (size_t i = 0; i < named.size(); ++i) {
        const std::optional<ShardDesc> &slice = named[i].shard;
        if (slice && (slice->count != tensorSize ||
                      slice->index != rank.coord("tensor")))
          field.at(list).at(i).at("shard").fail(
              "a shard over the tensor axis: count must be its size (" +
              std::to_string(tensorSize) +
              ") and index this rank's tensor "
              "coordinate (" +
              std::to_string(rank.coord("tensor")) + ")");
        const std::optional<FlatShardDesc> &s = named[i].flatShard;
        if (s && (s->count != pieces || s->index != piece))
          field.at(list)
              .at(i)
              .at("flat_shard")
              .fail("a piece over the " + zero +
                    " axis: count must be its size (" + std::to_string(pieces) +
                    ") and index this rank's " + zero + " coordinate (" +
                    std::to_string(piece) + ")");
      }
    }
    // A rank's input is the plan's whole input or, data-parallel, its
    // replica's contiguous rows of it.
    for (size_t i = 0; i < rank.inputs.size(); ++i) {
      const NamedBuffer &in = rank.inputs[i];
      Field at = field.at("inputs").at(i);
      auto global =
          std::find_if(plan.inputs.begin(), plan.inputs.end(),
                       [&](const InputDesc &d) { return d.name == in.name; });
      if (global == plan.inputs.end())
        at.at("name").fail("'" + in.name + "' is not one of the plan's inputs");
      const std::optional<ShardDesc> &s = in.shard;
      if (s && (s->dim != 0 || s->blocks != 1 || s->count != dataSize ||
                s->index != rank.coord("data")))
        at.at("shard").fail(
            "an input's shard is its data-parallel replica's rows: dim 0, "
            "blocks 1, count the data axis's size (" +
            std::to_string(dataSize) +
            ") and index this rank's data "
            "coordinate (" +
            std::to_string(rank.coord("data")) + ")");
      std::vector<int64_t> shape = rank.buffers[in.buffer].shape;
      if (s)
        shape = fullShape(shape, *s);
      if (shape != global->shape)
        at.fail("buffer " + std::to_string(in.buffer) + " (" +
                shapeString(rank.buffers[in.buffer].shape) + ")" +
                (s ? " x " + std::to_string(s->count) + " replicas" : "") +
                " does not hold input '" + in.name + "' (" +
                shapeString(global->shape) + ")");
    }
    // A one-rank load's other ranks hold no collectives: the loaded rank's
    // groups run its program (loadPlan), so their sequences are its own.
    if (!rank.complete)
      continue;
    std::map<std::string, std::vector<Collective>> mine;
    for (size_t i = 0; i < rank.instructions.size(); ++i) {
      const Instruction &inst = rank.instructions[i];
      if (!isCollective(inst.op))
        continue;
      if (!names.count(inst.axis))
        originField(field, rank, "instructions", i)
            .at("axis")
            .fail("'" + inst.axis + "' is not an axis of the mesh");
      if (inst.op != "all_reduce") {
        // The whole tensor is the parts laid along `dim`.
        const BufferDesc &x = rank.buffers[inst.inputs[0]],
                         &y = rank.buffers[inst.outputs[0]];
        std::vector<int64_t> part = inst.op == "all_gather" ? x.shape : y.shape;
        part[inst.dim] *= plan.axisSize(inst.axis);
        if (part != (inst.op == "all_gather" ? y.shape : x.shape))
          originField(field, rank, "instructions", i)
              .fail(inst.op + " over '" + inst.axis + "' (" +
                    std::to_string(plan.axisSize(inst.axis)) +
                    " ranks) along " + "dimension " + std::to_string(inst.dim) +
                    " cannot turn " + shapeString(x.shape) + " into " +
                    shapeString(y.shape));
      }
      mine[inst.axis].push_back(
          {inst.op + (inst.op == "all_reduce"
                          ? " (" + inst.reduction + ")"
                          : " along " + std::to_string(inst.dim)),
           inst.tag, rank.buffers[inst.inputs[0]].bytes});
    }
    for (const std::string &axis : axisNames) {
      std::vector<Collective> &sequence = mine[axis];
      auto [it, first] = groups.insert(
          {{axis, plan.groupOf(rank, axis)}, {rank.rank, sequence}});
      if (first)
        continue;
      const auto &[leader, theirs] = it->second;
      for (size_t k = 0; k < std::max(sequence.size(), theirs.size()); ++k) {
        // MPI matches a group's collectives by order: the kinds and sizes
        // must agree; tags are each rank's own (its post-wait pairs).
        if (k < sequence.size() && k < theirs.size() &&
            sequence[k].op == theirs[k].op &&
            sequence[k].bytes == theirs[k].bytes)
          continue;
        auto describe = [](const std::vector<Collective> &s, size_t k) {
          return k < s.size()
                     ? s[k].op + " tag " + std::to_string(s[k].tag) + " of " +
                           std::to_string(s[k].bytes) + " bytes"
                     : std::string("nothing");
        };
        field.fail("collective " + std::to_string(k) + " over '" + axis +
                   "' is " + describe(sequence, k) + ", on rank " +
                   std::to_string(leader) + " of its group " +
                   describe(theirs, k) + " (the group would hang)");
      }
    }
  }
}

} // namespace weft::rt::detail

namespace weft::rt {

std::vector<std::pair<int64_t, int64_t>> transferChannels(const Plan &plan) {
  std::set<std::pair<int64_t, int64_t>> channels;
  for (const RankPlan &rank : plan.ranks)
    for (const Instruction &inst : rank.instructions)
      if (inst.op == "isend")
        channels.insert({rank.rank, inst.peer});
  return {channels.begin(), channels.end()};
}

} // namespace weft::rt
