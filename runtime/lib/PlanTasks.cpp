//===- PlanTasks.cpp - a program's task form, expanded --------------------===//
//
// expandTasks (PlanTasks.h): checks the task form's own structure (the
// fields, frame and body indices, ids against the micro-batch's frame,
// relative tags) and writes the explicit program; the loader then checks
// that exactly as if it had been written out.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/PlanTasks.h"

#include "PlanField.h"

using json = nlohmann::json;

namespace weft::rt {

using detail::Field;

namespace {

// In the order a message names them when a program holds both forms.
const char *const kTaskFields[] = {"tasks", "bodies", "frames",
                                   "micro_batch_frames", "micro_batch_slots"};

bool isTaskField(const std::string &key) {
  for (const char *field : kTaskFields)
    if (key == field)
      return true;
  return false;
}

/// Evaluates the micro-batch part of the expressions under `value` (in
/// place) at micro-batch `m`: {"coord"?, "times"?, "plus"?,
/// "per_micro_batch"} becomes the coordinate expression or integer it is at
/// m. Coordinate expressions without per_micro_batch stay as they are.
void evaluate(json &value, int64_t m, const std::string &file,
              const std::string &path) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      evaluate(value[i], m, file, path + "[" + std::to_string(i) + "]");
    return;
  }
  if (!value.is_object())
    return;
  if (!value.contains("per_micro_batch")) {
    if (!value.contains("coord"))
      for (auto &[key, item] : value.items())
        evaluate(item, m, file, path + "." + key);
    return;
  }
  Field e(value, path, file);
  for (const auto &[key, item] : value.items())
    if (key != "coord" && key != "times" && key != "plus" &&
        key != "per_micro_batch")
      e.fail("a micro-batch expression has coord, times, plus and "
             "per_micro_batch, not '" +
             key + "'");
  bool coord = value.contains("coord");
  if (value.contains("times") && !coord)
    e.at("times").fail("times needs coord (without coord the expression is "
                       "the integer plus + per_micro_batch * micro-batch)");
  int64_t times =
      coord && value.contains("times") ? e.at("times").integer() : 1;
  int64_t plus = value.contains("plus") ? e.at("plus").integer() : 0;
  int64_t per = e.at("per_micro_batch").integer();
  int64_t at =
      detail::affine(e, per, m, plus, " at micro-batch " + std::to_string(m));
  if (!coord) {
    value = at;
    return;
  }
  // As weftc writes coordinate expressions: times 1 and plus 0 omitted.
  json out = {{"coord", e.at("coord").string()}};
  if (times != 1)
    out["times"] = times;
  if (at != 0)
    out["plus"] = at;
  value = std::move(out);
}

/// A body collective's tag at `inst["tag"]` (evaluated): relative to the
/// task instance's first post, made absolute by adding `base`.
void rebaseTag(json &inst, int64_t base, const Field &source,
               const std::string &instance) {
  if (!inst.contains("tag"))
    return; // the loader names the missing field
  json &tag = inst["tag"];
  Field f(tag, source.path + ".tag", source.file);
  std::string where = " (" + std::to_string(base) +
                      " collectives posted before " + instance + ")";
  if (tag.is_number_integer()) {
    int64_t relative = tag.get<int64_t>();
    int64_t absolute = detail::affine(f, 1, relative, base, where);
    if (absolute < 0)
      f.fail("relative tag " + std::to_string(relative) + " + " +
             std::to_string(base) + " collectives posted before " + instance +
             " is " + std::to_string(absolute) +
             ": a tag must not be negative (it names a post of this task or "
             "an earlier one)");
    tag = absolute;
  } else if (tag.is_object() && tag.contains("coord")) {
    int64_t plus = tag.contains("plus") ? f.at("plus").integer() : 0;
    plus = detail::affine(f, 1, plus, base, where);
    if (plus != 0)
      tag["plus"] = plus;
    else
      tag.erase("plus");
  }
}

bool isPost(const json &inst) {
  return inst.is_object() && inst.contains("op") && inst["op"].is_string() &&
         isCollective(inst["op"].get<std::string>());
}

/// A slot group: its micro-batches' buffers rotate over `count` slots
/// `bytes` apart.
struct SlotGroup {
  int64_t count = 1, bytes = 0;
};

/// `micro_batch_slots`: the slot groups (the memory plan rotates each kind
/// of carried buffer over its own slots).
std::vector<SlotGroup> slotGroups(const Field &slots) {
  std::vector<SlotGroup> groups;
  for (size_t g = 0; g < slots.size(); ++g) {
    Field group = slots.at(g);
    int64_t count = group.at("count").integer();
    if (count < 1)
      group.at("count").fail("needs count >= 1");
    groups.push_back({count, group.at("bytes").nonNegative()});
  }
  return groups;
}

/// The slot group template `t` is placed in (`slots: g`); -1 when it is
/// not slotted.
int64_t slotGroupOf(const Field &t, size_t groups) {
  if (!t.value.contains("slots"))
    return -1;
  int64_t g = t.at("slots").nonNegative();
  if (g >= int64_t(groups))
    t.at("slots").fail("slot group " + std::to_string(g) + " does not exist (" +
                       std::to_string(groups) + " in micro_batch_slots)");
  return g;
}

/// The checked frames: every template an object without `id`, a
/// non-negative offset, its slot group one of `groups`, `view_of` a program
/// buffer or an earlier template of its frame.
void checkFrames(const Field &frames, int64_t n, size_t groups) {
  for (size_t f = 0; f < frames.size(); ++f) {
    Field frame = frames.at(f);
    for (size_t j = 0; j < frame.size(); ++j) {
      Field t = frame.at(j);
      if (!t.value.is_object())
        t.fail("expected an object");
      if (t.value.contains("id"))
        t.at("id").fail("a frame template has no id: each micro-batch's "
                        "copy takes the next id");
      t.at("offset").nonNegative();
      slotGroupOf(t, groups);
      if (!t.value.contains("view_of"))
        continue;
      int64_t v = t.at("view_of").nonNegative();
      if (v >= n && v - n >= int64_t(j))
        t.at("view_of").fail("buffer " + std::to_string(v) +
                             " is neither a program buffer (ids < " +
                             std::to_string(n) +
                             ") nor an earlier template of this frame (" +
                             (j == 0 ? std::string("the first has none")
                                     : "ids " + std::to_string(n) + " to " +
                                           std::to_string(n + int64_t(j) - 1)) +
                             ")");
    }
  }
}

/// Ids of a body instruction's `key` list at micro-batch `m` (in `inst`, a
/// copy of `body`'s instruction `j`): program buffers stay, frame template
/// j' becomes the micro-batch's copy of it. Reads the JSON directly; only a
/// list it cannot take is read again as a field, for the message (every
/// task instance's instructions pass here: millions at GPT-3 scale).
void remapIds(json &inst, const char *key, const Field &body, size_t j,
              int64_t n, int64_t m, int64_t first, int64_t frameSize) {
  auto it = inst.find(key);
  if (it != inst.end() && it->is_array()) {
    bool valid = true;
    for (const json &id : *it)
      valid &= id.is_number_integer() && id.get<int64_t>() >= 0 &&
               id.get<int64_t>() - n < frameSize;
    if (valid) {
      for (json &id : *it)
        if (int64_t v = id.get<int64_t>(); v >= n)
          id = first + (v - n);
      return;
    }
  }
  Field list = body.at(j).at(key);
  for (size_t i = 0; i < list.size(); ++i) {
    int64_t id = list.at(i).nonNegative();
    if (id - n >= frameSize)
      list.at(i).fail("buffer " + std::to_string(id) + " does not exist (" +
                      std::to_string(n) + " program buffers + " +
                      std::to_string(frameSize) +
                      " frame buffers for micro-batch " + std::to_string(m) +
                      ")");
  }
}

} // namespace

bool isTaskForm(const json &program) {
  if (!program.is_object())
    return false;
  for (const char *key : kTaskFields)
    if (program.contains(key))
      return true;
  return false;
}

/// A task-form program with its structure checked and indexed: what the
/// explicit program's buffer or instruction at an origin is, written one at
/// a time (expandTasks writes them all).
class LazyProgram {
public:
  LazyProgram(json owned, const std::string &file, const std::string &path)
      : program(std::move(owned)), file(file), path(path),
        p(program, path, file) {
    if (!program.is_object())
      p.fail("expected an object");
    for (const char *key : kTaskFields)
      if (program.contains(key) && program.contains("instructions"))
        p.fail(std::string("holds both instructions and ") + key +
               ": a program is in the explicit form or the task form");
    n = p.at("buffers").size();
    groups = slotGroups(p.at("micro_batch_slots"));
    Field frames = p.at("frames");
    checkFrames(frames, n, groups.size());
    Field frameOf = p.at("micro_batch_frames");
    int64_t microBatches = frameOf.size();
    frame.resize(microBatches);
    first.resize(microBatches + 1);
    int64_t next = n;
    for (int64_t m = 0; m < microBatches; ++m) {
      frame[m] = frameOf.at(m).nonNegative();
      if (frame[m] >= int64_t(frames.size()))
        frameOf.at(m).fail("frame " + std::to_string(frame[m]) +
                           " does not exist (" + std::to_string(frames.size()) +
                           " frames)");
      first[m] = next;
      next += frames.value[frame[m]].size();
    }
    first[microBatches] = next;
    // Each body's phase and collective posts (a task instance's tags count
    // from the posts before it).
    Field bodies = p.at("bodies");
    std::vector<int64_t> posts(bodies.size(), 0);
    expressions.resize(bodies.size());
    for (size_t b = 0; b < bodies.size(); ++b) {
      Field body = bodies.at(b);
      body.at("phase").string();
      Field list = body.at("instructions");
      for (size_t j = 0; j < list.size(); ++j) {
        Field inst = list.at(j);
        if (!inst.value.is_object())
          inst.fail("expected an object");
        for (const char *key : {"phase", "micro_batch", "chunk"})
          if (inst.value.contains(key))
            inst.at(key).fail("a body instruction takes its phase from its "
                              "body and its micro-batch and chunk from its "
                              "task");
        posts[b] += isPost(inst.value);
        expressions[b].push_back(
            detail::holdsMember(inst.value, {"per_micro_batch", "coord"}));
      }
    }
    Field tasks = p.at("tasks");
    int64_t base = 0;
    for (size_t t = 0; t < tasks.size(); ++t) {
      Field task = tasks.at(t);
      int64_t b = task.at("body").nonNegative();
      if (b >= int64_t(bodies.size()))
        task.at("body").fail("body " + std::to_string(b) + " does not exist (" +
                             std::to_string(bodies.size()) + " bodies)");
      int64_t m = task.at("micro_batch").nonNegative();
      if (m >= microBatches)
        task.at("micro_batch")
            .fail("micro-batch " + std::to_string(m) + " does not exist (" +
                  std::to_string(microBatches) +
                  " micro-batches in micro_batch_frames)");
      if (task.has("chunk"))
        task.at("chunk").nonNegative();
      taskBase.push_back(base);
      base += posts[b];
    }
  }

  /// The program's fields other than the task form's.
  json rest() const {
    json out = json::object();
    for (const auto &[key, item] : program.items())
      if (!isTaskField(key))
        out[key] = item;
    return out;
  }

  /// Every buffer's and instruction's origin, in the explicit order.
  void index(TaskOrigins &where) const {
    where.buffers.clear();
    where.instructions.clear();
    for (int64_t i = 0; i < n; ++i)
      where.buffers.push_back({-1, i, -1, -1});
    for (size_t m = 0; m < frame.size(); ++m)
      for (int64_t j = 0; j < first[m + 1] - first[m]; ++j)
        where.buffers.push_back({frame[m], j, -1, int64_t(m)});
    const json &tasks = program["tasks"];
    for (size_t t = 0; t < tasks.size(); ++t) {
      int64_t b = tasks[t]["body"], m = tasks[t]["micro_batch"];
      int64_t chunk = tasks[t].value("chunk", int64_t(-1));
      size_t count = program["bodies"][b]["instructions"].size();
      for (size_t j = 0; j < count; ++j)
        where.instructions.push_back({b, int64_t(j), int64_t(t), m, chunk});
    }
  }

  /// Frame template `o.index` of frame `o.from` at micro-batch `o.microBatch`.
  json buffer(const TaskOrigin &o) const {
    int64_t m = o.microBatch;
    Field t = p.at("frames").at(o.from).at(o.index);
    json b = t.value;
    b.erase("slots");
    b["id"] = first[m] + o.index;
    int64_t offset;
    if (!placedOffset(o, offset)) { // it overflows: affine names it
      SlotGroup slot = groups[slotGroupOf(t, groups.size())];
      detail::affine(t.at("offset"), m % slot.count, slot.bytes,
                     t.at("offset").integer(),
                     " at micro-batch " + std::to_string(m));
    }
    b["offset"] = offset;
    if (b.contains("view_of") && b["view_of"].get<int64_t>() >= n)
      b["view_of"] = first[m] + (b["view_of"].get<int64_t>() - n);
    return b;
  }

  /// Frame buffer `o`'s offset: its template's, plus (m mod K) * S of its
  /// slot group (checkFrames checked both fields); false if it overflows.
  bool placedOffset(const TaskOrigin &o, int64_t &offset) const {
    const json &t = program["frames"][o.from][o.index];
    offset = t["offset"].get<int64_t>();
    auto slots = t.find("slots");
    if (slots == t.end())
      return true;
    const SlotGroup &g = groups[slots->get<int64_t>()];
    int64_t step;
    return !__builtin_mul_overflow(o.microBatch % g.count, g.bytes, &step) &&
           !__builtin_add_overflow(offset, step, &offset);
  }

  /// Body instruction `o.index` of body `o.from` as task `o.task` runs it.
  json instruction(const TaskOrigin &o) const {
    int64_t b = o.from, j = o.index, m = o.microBatch;
    Field list = p.at("bodies").at(b).at("instructions");
    json inst = list.value[j];
    inst["phase"] = program["bodies"][b]["phase"];
    inst["micro_batch"] = m;
    if (o.chunk >= 0)
      inst["chunk"] = o.chunk;
    for (const char *key : {"inputs", "outputs"})
      remapIds(inst, key, list, j, n, m, first[m], first[m + 1] - first[m]);
    bool rebase =
        isPost(inst) || (inst.contains("op") && inst["op"].is_string() &&
                         isCollectiveWait(inst["op"].get<std::string>()));
    // The field is made (its path is text) only where a message may need
    // it: remapping and most instructions take none.
    if (expressions[b][j] || rebase) {
      Field source = list.at(j);
      for (const char *key : {"peer", "tag", "attrs"})
        if (expressions[b][j] && inst.contains(key))
          evaluate(inst[key], m, file, source.path + "." + key);
      if (rebase)
        rebaseTag(inst, taskBase[o.task], source,
                  "tasks[" + std::to_string(o.task) + "]");
    }
    return inst;
  }

  json program;
  std::string file, path;
  Field p;
  int64_t n = 0;
  std::vector<SlotGroup> groups;
  /// Per micro-batch: its frame, its first buffer's id (and the count
  /// after the last).
  std::vector<int64_t> frame, first;
  std::vector<std::vector<bool>> expressions; ///< per body instruction
  std::vector<int64_t> taskBase; ///< per task: collective posts before it
};

json expandTasks(const json &program, const std::string &file,
                 const std::string &path, TaskOrigins *origins) {
  Field p(program, path, file);
  if (!program.is_object())
    p.fail("expected an object");
  if (!isTaskForm(program)) {
    if (origins)
      *origins = {};
    return program;
  }
  LazyProgram lazy(program, file, path);
  TaskOrigins where;
  lazy.index(where);
  json out = lazy.rest();
  json &buffers = out["buffers"];
  for (size_t i = lazy.n; i < where.buffers.size(); ++i)
    buffers.push_back(lazy.buffer(where.buffers[i]));
  json instructions = json::array();
  for (const TaskOrigin &o : where.instructions)
    instructions.push_back(lazy.instruction(o));
  out["instructions"] = std::move(instructions);
  if (origins)
    *origins = std::move(where);
  return out;
}

json expandTasksLazily(json program, const std::string &file,
                       const std::string &path, TaskOrigins &origins) {
  if (!isTaskForm(program)) {
    origins = {};
    return program;
  }
  auto lazy =
      std::make_shared<const LazyProgram>(std::move(program), file, path);
  lazy->index(origins);
  origins.lazy = lazy;
  return lazy->rest();
}

const json &TaskOrigins::buffer(size_t i) const {
  auto [it, added] = made.buffers.try_emplace(i);
  if (added)
    it->second = lazy->buffer(buffers[i]);
  return it->second;
}

const json &TaskOrigins::instruction(size_t i) const {
  auto [it, added] = made.instructions.try_emplace(i);
  if (added)
    it->second = lazy->instruction(instructions[i]);
  return it->second;
}

bool TaskOrigins::holdsExpression(size_t i) const {
  const TaskOrigin &o = instructions[i];
  return lazy->expressions[o.from][o.index];
}

int64_t TaskOrigins::postsBefore(size_t i) const {
  return lazy->taskBase[instructions[i].task];
}

int64_t TaskOrigins::firstFrameBuffer(int64_t microBatch) const {
  return lazy->first[microBatch];
}

int64_t TaskOrigins::frameOf(int64_t microBatch) const {
  return lazy->frame[microBatch];
}

const json &TaskOrigins::bodyInstruction(int64_t b, int64_t j) const {
  return lazy->program["bodies"][b]["instructions"][j];
}

bool TaskOrigins::placedOffset(size_t i, int64_t &offset) const {
  return lazy->placedOffset(buffers[i], offset);
}

std::string TaskOrigins::bufferField(size_t i) const {
  const TaskOrigin &o = buffers[i];
  std::string index = "[" + std::to_string(o.index) + "]";
  return o.from < 0 ? "buffers" + index
                    : "frames[" + std::to_string(o.from) + "]" + index;
}

std::string TaskOrigins::bufferNote(size_t i) const {
  const TaskOrigin &o = buffers[i];
  return o.from < 0 ? ""
                    : " (micro-batch " + std::to_string(o.microBatch) + ")";
}

std::string TaskOrigins::instructionField(size_t i) const {
  const TaskOrigin &o = instructions[i];
  return "bodies[" + std::to_string(o.from) + "].instructions[" +
         std::to_string(o.index) + "]";
}

std::string TaskOrigins::instructionNote(size_t i) const {
  const TaskOrigin &o = instructions[i];
  return " (tasks[" + std::to_string(o.task) + "], micro-batch " +
         std::to_string(o.microBatch) + ")";
}

json explicitPlan(const json &plan, const std::string &file) {
  json out = plan;
  if (!out.is_object() || !out.contains("programs") ||
      !out["programs"].is_array())
    return out;
  json &programs = out["programs"];
  for (size_t k = 0; k < programs.size(); ++k)
    if (isTaskForm(programs[k]))
      programs[k] =
          expandTasks(programs[k], file, "programs[" + std::to_string(k) + "]");
  return out;
}

} // namespace weft::rt
