//===- PlanView.cpp - a version-2 plan's programs, seen per rank ----------===//

#include "weft/runtime/PlanView.h"

#include "weft/runtime/PlanTasks.h"
#include "weft/runtime/Tensor.h"

#include "PlanField.h"

#include <climits>
#include <functional>

using json = nlohmann::json;

namespace weft::rt {

using detail::Field;

namespace {

/// Evaluates the coordinate expressions under `value` (in place) at `rank`.
void resolve(json &value, const MeshShape &mesh, int64_t rank,
             const std::string &file, const std::string &path) {
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      resolve(value[i], mesh, rank, file, path + "[" + std::to_string(i) + "]");
    return;
  }
  if (!value.is_object())
    return;
  // A task body's micro-batch expressions are evaluated by expandTasks.
  if (value.contains("per_micro_batch"))
    Field(value, path, file)
        .at("per_micro_batch")
        .fail("per_micro_batch is allowed only in a task body's instructions");
  if (!value.contains("coord")) {
    for (auto &[key, item] : value.items())
      resolve(item, mesh, rank, file, path + "." + key);
    return;
  }
  Field e(value, path, file);
  std::string axis = e.at("coord").string();
  for (const auto &[key, item] : value.items())
    if (key != "coord" && key != "times" && key != "plus")
      e.fail("a coordinate expression has coord, times and plus, not '" + key +
             "'");
  int64_t times = e.has("times") ? e.at("times").integer() : 1;
  int64_t plus = e.has("plus") ? e.at("plus").integer() : 0;
  int64_t coord;
  try {
    coord = mesh.coord(rank, axis);
  } catch (const Error &error) {
    e.at("coord").fail(error.what());
  }
  value = detail::affine(e, times, coord, plus);
}

} // namespace

// Expressions stand only where the format allows them: a named list's
// shard and flat shard, an instruction's peer, tag and attributes.
void resolveNamedLists(json &program, const MeshShape &mesh, int64_t rank,
                       const std::string &file, const std::string &path) {
  for (const char *list : {"params", "optimizer_state", "inputs"})
    if (program.contains(list) && program[list].is_array())
      for (size_t i = 0; i < program[list].size(); ++i)
        for (const char *shard : {"shard", "flat_shard"})
          if (program[list][i].is_object() && program[list][i].contains(shard))
            resolve(program[list][i][shard], mesh, rank, file,
                    path + "." + list + "[" + std::to_string(i) + "]." + shard);
}

void resolveInstruction(json &inst, const MeshShape &mesh, int64_t rank,
                        const std::string &file, const std::string &path) {
  for (const char *key : {"peer", "tag", "attrs"})
    if (inst.is_object() && inst.contains(key))
      resolve(inst[key], mesh, rank, file, path + "." + key);
}

bool hasCoordinates(const json &value) {
  // per_micro_batch too, so that resolve refuses it outside a task body.
  return detail::holdsMember(value, {"coord", "per_micro_batch"});
}

MeshShape MeshShape::fromJson(const json &mesh, const std::string &file) {
  MeshShape shape;
  Field axes = Field(mesh, "mesh", file).at("axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    Field axis = axes.at(i);
    int64_t size = axis.at("size").integer();
    if (size < 1)
      axis.at("size").fail("an axis needs a size >= 1");
    shape.axes.push_back({axis.at("name").string(), size});
  }
  // Sub-axes are checked with the plan (checkMesh); a malformed one is no
  // axis an expression can name.
  if (mesh.contains("sub_axes") && mesh["sub_axes"].is_array())
    for (const json &sub : mesh["sub_axes"])
      if (sub.is_object() && sub.value("name", json()).is_string() &&
          sub.value("of", json()).is_string() &&
          sub.value("size", json()).is_number_integer() &&
          sub.value("stride", json()).is_number_integer())
        shape.subAxes.push_back(
            {sub["name"], sub["of"], sub["size"], sub["stride"]});
  return shape;
}

int64_t MeshShape::size() const {
  // Saturating: a mesh no plan can list the ranks of.
  int64_t n = 1;
  for (const auto &[name, size] : axes)
    if (__builtin_mul_overflow(n, size, &n))
      return INT64_MAX;
  return n;
}

std::vector<int64_t> MeshShape::coords(int64_t rank) const {
  std::vector<int64_t> out(axes.size());
  for (size_t i = axes.size(); i-- > 0;) {
    out[i] = rank % axes[i].second;
    rank /= axes[i].second;
  }
  return out;
}

int64_t MeshShape::coord(int64_t rank, const std::string &axis) const {
  std::vector<int64_t> at = coords(rank);
  if (axis == "replica") {
    int64_t replica = 0;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i].first != "pipeline")
        replica = replica * axes[i].second + at[i];
    return replica;
  }
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].first == axis)
      return at[i];
  // A sub-axis factors a mesh axis (never another sub-axis).
  for (const Sub &sub : subAxes)
    if (sub.name == axis && sub.stride >= 1 && sub.size >= 1)
      for (size_t i = 0; i < axes.size(); ++i)
        if (axes[i].first == sub.of)
          return at[i] / sub.stride % sub.size;
  throw Error("the mesh has no axis '" + axis + "'");
}

std::string programPath(int64_t program, int64_t rank, bool shared) {
  std::string path = "programs[" + std::to_string(program) + "]";
  return shared ? "rank " + std::to_string(rank) + ": " + path : path;
}

const json &programOf(const json &plan, int64_t rank, const std::string &file,
                      const MeshShape &mesh) {
  Field root(plan, "", file);
  Field map = root.at("rank_programs"), programs = root.at("programs");
  if (int64_t(map.size()) != mesh.size())
    map.fail(std::to_string(map.size()) + " ranks for a mesh of " +
             std::to_string(mesh.size()) + " devices");
  int64_t k = map.at(rank).integer();
  if (k < 0 || k >= int64_t(programs.size()))
    map.at(rank).fail("program " + std::to_string(k) + " does not exist (" +
                      std::to_string(programs.size()) + " programs)");
  Field program = programs.at(k);
  if (!program.value.is_object())
    program.fail("expected an object");
  for (const char *key : {"rank", "coords", "program"})
    if (program.value.contains(key))
      program.at(key).fail(
          "a program is shared by ranks: rank_programs and the mesh give "
          "each rank's number and coordinates");
  return program.value;
}

json rankView(const json &plan, int64_t rank, const std::string &file) {
  MeshShape mesh =
      MeshShape::fromJson(Field(plan, "", file).at("mesh").value, file);
  const json &shared = programOf(plan, rank, file, mesh);
  int64_t k = plan["rank_programs"][rank].get<int64_t>();
  std::string path = "programs[" + std::to_string(k) + "]";
  // A view shows the explicit form.
  json expanded;
  if (isTaskForm(shared))
    expanded = expandTasks(shared, file, path);
  const json &program = expanded.is_null() ? shared : expanded;
  json view = {{"rank", rank}, {"program", k}};
  json coords = json::object();
  std::vector<int64_t> c = mesh.coords(rank);
  for (size_t i = 0; i < mesh.axes.size(); ++i)
    coords[mesh.axes[i].first] = c[i];
  view["coords"] = coords;
  for (const auto &[key, item] : program.items())
    view[key] = item;
  resolveNamedLists(view, mesh, rank, file, path);
  if (view.contains("instructions") && view["instructions"].is_array())
    for (size_t i = 0; i < view["instructions"].size(); ++i)
      resolveInstruction(view["instructions"][i], mesh, rank, file,
                         path + ".instructions[" + std::to_string(i) + "]");
  return view;
}

json planView(const json &plan, int64_t rank, const std::string &file) {
  json view = json::object();
  for (const auto &[key, item] : plan.items())
    if (key != "programs" && key != "rank_programs")
      view[key] = item;
  view["format"] = "weft-plan-view";
  Field root(plan, "", file);
  MeshShape mesh = MeshShape::fromJson(root.at("mesh").value, file);
  if (rank >= mesh.size())
    root.at("rank_programs")
        .fail("rank " + std::to_string(rank) + " is not in the mesh of " +
              std::to_string(mesh.size()) + " devices");
  // Expanded once, not per rank.
  bool tasks = false;
  if (plan.contains("programs") && plan["programs"].is_array())
    for (const json &program : plan["programs"])
      tasks = tasks || isTaskForm(program);
  json expanded = tasks ? explicitPlan(plan, file) : json();
  json ranks = json::array();
  for (int64_t r = 0; r < mesh.size(); ++r)
    if (rank < 0 || r == rank)
      ranks.push_back(rankView(tasks ? expanded : plan, r, file));
  view["ranks"] = std::move(ranks);
  return view;
}

std::string compactJson(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

/// Objects at depth 0 and each program or rank are expanded; arrays of
/// objects put one compact element per line; everything else is compact.
/// `programs`, when given, are the programs already printed (at indent 2).
void printValue(std::string &os, const json &value, int indent, bool expand,
                const std::vector<std::string> *programs) {
  std::string pad(indent, ' ');
  if (expand && value.is_object()) {
    os += "{\n";
    size_t i = 0;
    for (const auto &[key, item] : value.items()) {
      os += pad + " " + compactJson(json(key)) + ": ";
      if (indent == 0 && key == "programs" && programs) {
        os += "[\n";
        for (size_t k = 0; k < programs->size(); ++k)
          os += pad + "  " + (*programs)[k] +
                (k + 1 < programs->size() ? ",\n" : "\n");
        os += pad + " ]";
      } else {
        printValue(os, item, indent + 1, key == "ranks" || key == "programs",
                   nullptr);
      }
      os += ++i < value.size() ? ",\n" : "\n";
    }
    os += pad + "}";
    return;
  }
  bool objects = value.is_array() && !value.empty() &&
                 (value[0].is_object() || value[0].is_array());
  if (objects) {
    os += "[\n";
    for (size_t i = 0; i < value.size(); ++i) {
      os += pad + " ";
      if (expand)
        printValue(os, value[i], indent + 1, true, nullptr);
      else
        os += compactJson(value[i]);
      os += i + 1 < value.size() ? ",\n" : "\n";
    }
    os += pad + "]";
    return;
  }
  os += compactJson(value);
}

} // namespace

std::string printPlanText(const json &plan,
                          const std::vector<std::string> *programs) {
  std::string os;
  printValue(os, plan, 0, true, programs);
  os += "\n";
  return os;
}

std::string printProgramText(const json &program) {
  std::string os;
  printValue(os, program, 2, true, nullptr);
  return os;
}

} // namespace weft::rt
