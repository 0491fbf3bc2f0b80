//===- TaskBodies.cpp - a program's micro-batch work as task bodies -------===//
//
// A task instance is a maximal run of instructions of one phase and one
// micro-batch. Instances whose instructions agree once their micro-batch's
// buffers are numbered within its frame, their collective tags counted
// from the instance's first, and their integers that grow with the
// micro-batch (a micro-batch's rows of the input, transfer tags) written as
// micro-batch expressions share one body.
//
//===----------------------------------------------------------------------===//

#include "TaskBodies.h"

#include "weft/runtime/PlanView.h"

#include <cassert>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

using json = nlohmann::json;
using namespace weft;

namespace {

/// An integer of an instruction that may differ between the instances of a
/// body: a plain integer (of attrs, peer, tag) or an expression's `plus`
/// (both may grow with the micro-batch), or an expression's `times` (which
/// may not).
struct Leaf {
  json *value;
  json *expression; ///< the expression holding it, or null
  bool fittable;
};

void collectLeaves(json &value, json *expression, bool fittable,
                   std::vector<Leaf> &out) {
  if (value.is_number_integer()) {
    out.push_back({&value, expression, fittable});
  } else if (value.is_object() && value.contains("coord")) {
    if (value.contains("times"))
      out.push_back({&value["times"], &value, false});
    if (value.contains("plus"))
      out.push_back({&value["plus"], &value, true});
    else
      value["plus"] = 0, out.push_back({&value["plus"], &value, true});
  } else if (value.is_array() || value.is_object()) {
    for (json &item : value)
      collectLeaves(item, nullptr, true, out);
  }
}

/// The leaves of one instruction, appended to `leaves`.
void addLeaves(json &inst, std::vector<Leaf> &leaves) {
  for (const char *key : {"attrs", "peer", "tag"})
    if (inst.contains(key))
      collectLeaves(inst[key], nullptr, true, leaves);
}

std::vector<Leaf> leavesOf(json &body) {
  std::vector<Leaf> leaves;
  for (json &inst : body)
    addLeaves(inst, leaves);
  return leaves;
}

/// One way of filling a body's leaves: a + c * micro-batch each.
using Fit = std::vector<std::pair<int64_t, int64_t>>;

struct Instance {
  int64_t microBatch;
  std::vector<int64_t> values; ///< its leaves, in leavesOf order
};

/// Instances sharing one body template, and how they split into bodies.
struct Group {
  json templateBody; ///< the first instance's body
  std::string phase;
  std::vector<size_t> instances; ///< indices into the instance list
};

/// Fits each leaf of `members` as a + c·m; splits them by the leaves that
/// do not fit (or are not fittable and differ) and fits each part.
void fitGroup(const std::vector<Instance> &all, std::vector<size_t> members,
              const std::vector<bool> &fittable,
              std::vector<std::pair<Fit, std::vector<size_t>>> &out) {
  const Instance &first = all[members.front()];
  size_t leaves = first.values.size();
  Fit fit(leaves);
  std::vector<size_t> misfits;
  for (size_t p = 0; p < leaves; ++p) {
    int64_t v0 = first.values[p], m0 = first.microBatch;
    std::optional<int64_t> slope = 0;
    for (size_t i : members) {
      const Instance &in = all[i];
      if (in.values[p] == v0)
        continue;
      int64_t dm = in.microBatch - m0, dv = in.values[p] - v0;
      if (!fittable[p] || dm == 0 || dv % dm) {
        slope.reset();
        break;
      }
      slope = dv / dm;
      break;
    }
    if (slope)
      for (size_t i : members)
        if (all[i].values[p] != v0 + *slope * (all[i].microBatch - m0)) {
          slope.reset();
          break;
        }
    if (!slope) {
      misfits.push_back(p);
      continue;
    }
    fit[p] = {v0 - *slope * m0, *slope};
  }
  if (misfits.empty()) {
    out.push_back({std::move(fit), std::move(members)});
    return;
  }
  std::map<std::vector<int64_t>, std::vector<size_t>> parts;
  for (size_t i : members) {
    std::vector<int64_t> key;
    for (size_t p : misfits)
      key.push_back(all[i].values[p]);
    parts[key].push_back(i);
  }
  for (auto &[key, part] : parts)
    fitGroup(all, std::move(part), fittable, out);
}

/// The body of `group` with its leaves filled by `fit`.
json fillBody(const Group &group, const Fit &fit) {
  json body = group.templateBody;
  std::vector<Leaf> leaves = leavesOf(body);
  for (auto [leaf, line] : llvm::zip_equal(leaves, fit)) {
    auto [plus, slope] = line;
    if (!leaf.expression) {
      *leaf.value =
          slope ? json{{"plus", plus}, {"per_micro_batch", slope}} : json(plus);
      if (slope && !plus)
        leaf.value->erase("plus");
      continue;
    }
    *leaf.value = plus;
    if (slope)
      (*leaf.expression)["per_micro_batch"] = slope;
  }
  // Expressions as weftc writes them: no zero `plus`.
  for (Leaf &leaf : leaves)
    if (leaf.expression && leaf.fittable && *leaf.value == 0)
      leaf.expression->erase("plus");
  return {{"phase", group.phase}, {"instructions", std::move(body)}};
}

} // namespace

void weft::addTaskFields(json &program,
                         const std::vector<TaskInstance> &instances) {
  json &instructions = program["instructions"];
  for (const TaskInstance &task : instances) {
    assert(task.repeats < 0 && "an explicit program writes every instance");
    for (size_t i = task.first; i < task.first + task.count; ++i) {
      instructions[i]["phase"] = task.phase;
      instructions[i]["micro_batch"] = task.microBatch;
      if (task.chunk >= 0)
        instructions[i]["chunk"] = task.chunk;
    }
  }
}

bool weft::writeTaskBodies(json &program,
                           std::vector<TaskInstance> &taskInstances,
                           const std::vector<int64_t> &frameRepeats,
                           const std::vector<BufferHome> &homes,
                           const std::vector<MemoryPlan::SlotGroup> &slots) {
  json &buffers = program["buffers"];
  json &instructions = program["instructions"];
  int64_t microBatches = 1;
  for (const BufferHome &home : homes)
    microBatches = std::max(microBatches, home.microBatch + 1);
  for (const TaskInstance &task : taskInstances)
    microBatches = std::max(microBatches, task.microBatch + 1);
  // One micro-batch: no instance of another to repeat.
  if (microBatches == 1)
    return false;

  // Program buffers keep their order, numbered 0..n-1; a frame's buffers
  // are n + their index in it. A program buffer that is a view of the same
  // type as an earlier view of its bytes is that buffer (an accumulator's
  // in-place sums: one buffer per micro-batch would make each micro-batch's
  // instructions name a different one).
  // `number`: a program buffer's new id, a frame buffer's index in its
  // frame.
  std::vector<int64_t> number(homes.size());
  std::vector<bool> dropped(homes.size(), false);
  std::vector<std::vector<size_t>> frameOf(microBatches);
  std::map<std::tuple<int64_t, std::string, json>, size_t> sameBytes;
  int64_t programCount = 0;
  for (auto [id, home] : llvm::enumerate(homes)) {
    if (home.microBatch >= 0) {
      number[id] = frameOf[home.microBatch].size();
      frameOf[home.microBatch].push_back(id);
      continue;
    }
    const json &b = buffers[id];
    int64_t root = b.value("view_of", int64_t(id));
    auto [it, added] = sameBytes.insert(
        {{root, b["dtype"].get<std::string>(), b["shape"]}, id});
    dropped[id] = !added;
    number[id] = added ? programCount++ : number[it->second];
  }
  // A buffer id as micro-batch `m`'s instructions name it; -1 if another
  // micro-batch's frame holds it.
  auto idIn = [&](size_t id, int64_t m) -> int64_t {
    if (homes[id].microBatch < 0)
      return number[id];
    return homes[id].microBatch == m ? programCount + number[id] : -1;
  };

  // The task form cannot say that a buffer views, or an instruction reads,
  // another micro-batch's frame (or a program buffer a frame's): checked
  // before the explicit program is moved into the task form.
  for (auto [id, home] : llvm::enumerate(homes))
    if (!dropped[id] && buffers[id].contains("view_of") &&
        idIn(buffers[id]["view_of"].get<size_t>(), home.microBatch) < 0)
      return false;
  for (const TaskInstance &task : taskInstances)
    for (size_t i = task.first; task.repeats < 0 && i < task.first + task.count;
         ++i)
      for (const char *key : {"inputs", "outputs"})
        for (const json &id : instructions[i][key])
          if (idIn(id.get<size_t>(), task.microBatch) < 0)
            return false;

  // From here on the explicit program's buffers and instructions are moved
  // into the task form, not copied.
  json programBuffers = json::array();
  for (auto [id, home] : llvm::enumerate(homes)) {
    if (home.microBatch >= 0 || dropped[id])
      continue;
    json b = std::move(buffers[id]);
    b["id"] = number[id];
    if (b.contains("view_of"))
      b["view_of"] = idIn(b["view_of"].get<size_t>(), -1);
    programBuffers.push_back(std::move(b));
  }
  json frames = json::array(), frameIndex = json::array();
  // By text: hashed once, not compared along a tree.
  std::unordered_map<std::string, size_t> frameByText;
  for (int64_t m = 0; m < microBatches; ++m) {
    if (size_t(m) < frameRepeats.size() && frameRepeats[m] >= 0) {
      frameIndex.push_back(frameIndex[frameRepeats[m]]);
      continue;
    }
    json frame = json::array();
    for (size_t id : frameOf[m]) {
      json b = std::move(buffers[id]);
      b.erase("id");
      b["offset"] = homes[id].slotZeroOffset;
      if (homes[id].slotGroup >= 0)
        b["slots"] = homes[id].slotGroup;
      if (b.contains("view_of"))
        b["view_of"] = idIn(b["view_of"].get<size_t>(), m);
      frame.push_back(std::move(b));
    }
    auto [it, added] =
        frameByText.insert({rt::compactJson(frame), frames.size()});
    if (added)
      frames.push_back(std::move(frame));
    frameIndex.push_back(it->second);
  }

  // Instances, each made a body template; alike templates grouped. A
  // repeat (TaskInstance::repeats) joins its instance's group with its own
  // integers where its patches hold them.
  std::vector<Instance> instances;
  std::vector<Group> groups;
  std::vector<std::vector<bool>> fittable; // per group: leaves that may grow
  std::vector<size_t> groupOf;             // per instance
  // Per instance: where each instruction's leaves start (and end), and how
  // many collectives it posts.
  std::vector<std::vector<size_t>> leafStart;
  std::vector<int64_t> collectivesIn;
  std::unordered_map<std::string, size_t> groupByText;
  int64_t collectives = 0;
  // An instruction in the body's form: buffers numbered within the frame,
  // collective tags counted from the instance's first.
  auto inBodyForm = [&](json &inst, int64_t m, int64_t base) {
    for (const char *key : {"inputs", "outputs"})
      for (json &id : inst[key])
        id = idIn(id.get<size_t>(), m);
    const std::string &op = inst["op"].get_ref<const std::string &>();
    if (rt::isCollective(op) || rt::isCollectiveWait(op))
      inst["tag"] = inst["tag"].get<int64_t>() - base;
    return rt::isCollective(op);
  };
  for (TaskInstance &task : taskInstances) {
    int64_t m = task.microBatch;
    int64_t base = collectives;
    Instance instance{m, {}};
    if (task.repeats >= 0) {
      size_t of = task.repeats;
      instance.values = instances[of].values;
      for (auto &[k, inst] : task.patches) {
        inBodyForm(inst, m, base);
        std::vector<Leaf> leaves;
        addLeaves(inst, leaves);
        // Emission compared it with its counterpart up to integers.
        assert(leaves.size() == leafStart[of][k + 1] - leafStart[of][k]);
        for (auto [p, leaf] : llvm::enumerate(leaves))
          instance.values[leafStart[of][k] + p] = leaf.value->get<int64_t>();
      }
      collectives += collectivesIn[of];
      groupOf.push_back(groupOf[of]);
      leafStart.emplace_back(); // a repeat is no repeat's original
      collectivesIn.push_back(collectivesIn[of]);
      groups[groupOf.back()].instances.push_back(instances.size());
      instances.push_back(std::move(instance));
      continue;
    }
    json body = json::array();
    int64_t posted = 0;
    for (size_t at = task.first; at < task.first + task.count; ++at) {
      json inst = std::move(instructions[at]);
      posted += inBodyForm(inst, m, base);
      body.push_back(std::move(inst));
    }
    collectives += posted;
    std::vector<Leaf> leaves;
    std::vector<size_t> starts;
    for (json &inst : body) {
      starts.push_back(leaves.size());
      addLeaves(inst, leaves);
    }
    starts.push_back(leaves.size());
    std::vector<bool> mayGrow;
    for (Leaf &leaf : leaves) {
      instance.values.push_back(leaf.value->get<int64_t>());
      mayGrow.push_back(leaf.fittable);
      *leaf.value = 0;
    }
    auto [it, added] = groupByText.insert(
        {task.phase + "\n" + rt::compactJson(body), groups.size()});
    if (added) {
      // The template keeps the first instance's leaves (fillBody sets all).
      for (auto [leaf, value] : llvm::zip_equal(leaves, instance.values))
        *leaf.value = value;
      groups.push_back({std::move(body), task.phase, {}});
      fittable.push_back(std::move(mayGrow));
    }
    groupOf.push_back(it->second);
    leafStart.push_back(std::move(starts));
    collectivesIn.push_back(posted);
    groups[it->second].instances.push_back(instances.size());
    instances.push_back(std::move(instance));
  }

  json bodies = json::array();
  std::vector<int64_t> bodyOf(instances.size());
  for (auto [g, group] : llvm::enumerate(groups)) {
    std::vector<std::pair<Fit, std::vector<size_t>>> fits;
    fitGroup(instances, group.instances, fittable[g], fits);
    for (auto &[fit, members] : fits) {
      for (size_t i : members)
        bodyOf[i] = bodies.size();
      bodies.push_back(fillBody(group, fit));
    }
  }
  json tasks = json::array();
  for (auto [i, instance] : llvm::enumerate(instances)) {
    tasks.push_back(
        {{"body", bodyOf[i]}, {"micro_batch", instance.microBatch}});
    if (taskInstances[i].chunk >= 0)
      tasks.back()["chunk"] = taskInstances[i].chunk;
  }

  // The named lists name arguments, results and constants: program
  // buffers (frameOf in EmitPlan.cpp gives none of them a frame).
  for (const char *list :
       {"params", "state", "optimizer_state", "inputs", "outputs", "constants"})
    for (json &entry : program[list])
      entry["buffer"] = number[entry["buffer"].get<size_t>()];
  json slotsJson = json::array();
  for (const MemoryPlan::SlotGroup &g : slots)
    slotsJson.push_back({{"count", g.count}, {"bytes", g.bytes}});
  program["buffers"] = std::move(programBuffers);
  program.erase("instructions");
  program["micro_batch_slots"] = std::move(slotsJson);
  program["frames"] = std::move(frames);
  program["micro_batch_frames"] = std::move(frameIndex);
  program["bodies"] = std::move(bodies);
  program["tasks"] = std::move(tasks);
  return true;
}
