//===- PlanView.cpp - a version-2 plan's programs, seen per rank ----------===//

#include "weft/runtime/PlanView.h"

#include "weft/runtime/Tensor.h"

#include <climits>
#include <functional>

using json = nlohmann::json;

namespace weft::rt {

namespace {

[[noreturn]] void fail(const std::string &file, const std::string &path,
                       const std::string &message) {
  throw Error(file + ": " + path + ": " + message);
}

const json &member(const json &object, const std::string &key,
                   const std::string &file, const std::string &path) {
  if (!object.is_object())
    fail(file, path, "expected an object");
  auto it = object.find(key);
  if (it == object.end())
    fail(file, path, "missing field '" + key + "'");
  return *it;
}

int64_t integer(const json &value, const std::string &file,
                const std::string &path) {
  if (!value.is_number_integer())
    fail(file, path, "expected an integer");
  return value.get<int64_t>();
}

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
  if (!value.contains("coord")) {
    for (auto &[key, item] : value.items())
      resolve(item, mesh, rank, file, path + "." + key);
    return;
  }
  const json &axis = value["coord"];
  if (!axis.is_string())
    fail(file, path + ".coord", "expected an axis name");
  for (const auto &[key, item] : value.items())
    if (key != "coord" && key != "times" && key != "plus")
      fail(file, path,
           "a coordinate expression has coord, times and plus, "
           "not '" +
               key + "'");
  int64_t times = value.contains("times")
                      ? integer(value["times"], file, path + ".times")
                      : 1;
  int64_t plus =
      value.contains("plus") ? integer(value["plus"], file, path + ".plus") : 0;
  int64_t coord;
  try {
    coord = mesh.coord(rank, axis.get<std::string>());
  } catch (const Error &e) {
    fail(file, path + ".coord", e.what());
  }
  int64_t result;
  if (__builtin_mul_overflow(times, coord, &result) ||
      __builtin_add_overflow(result, plus, &result))
    fail(file, path, "the expression overflows 64 bits");
  value = result;
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
  if (value.is_object() && value.contains("coord"))
    return true;
  if (value.is_array() || value.is_object())
    for (const json &item : value)
      if (hasCoordinates(item))
        return true;
  return false;
}

MeshShape MeshShape::fromJson(const json &mesh, const std::string &file) {
  MeshShape shape;
  const json &axes = member(mesh, "axes", file, "mesh");
  if (!axes.is_array())
    fail(file, "mesh.axes", "expected an array");
  for (size_t i = 0; i < axes.size(); ++i) {
    std::string path = "mesh.axes[" + std::to_string(i) + "]";
    const json &name = member(axes[i], "name", file, path);
    int64_t size =
        integer(member(axes[i], "size", file, path), file, path + ".size");
    if (!name.is_string() || size < 1)
      fail(file, path, "an axis needs a name and a size >= 1");
    shape.axes.push_back({name.get<std::string>(), size});
  }
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

std::string programPath(const json &plan, int64_t rank) {
  const json &map = plan.at("rank_programs");
  int64_t program = map.at(rank).get<int64_t>();
  int64_t sharing = 0;
  for (const json &k : map)
    sharing += k.is_number_integer() && k.get<int64_t>() == program;
  std::string path = "programs[" + std::to_string(program) + "]";
  return sharing > 1 ? "rank " + std::to_string(rank) + ": " + path : path;
}

const json &programOf(const json &plan, int64_t rank, const std::string &file,
                      const MeshShape &mesh) {
  const json &map = member(plan, "rank_programs", file, "");
  const json &programs = member(plan, "programs", file, "");
  if (!map.is_array() || !programs.is_array())
    fail(file, "programs", "programs and rank_programs must be arrays");
  if (int64_t(map.size()) != mesh.size())
    fail(file, "rank_programs",
         std::to_string(map.size()) + " ranks for a mesh of " +
             std::to_string(mesh.size()) + " devices");
  std::string at = "rank_programs[" + std::to_string(rank) + "]";
  int64_t k = integer(map.at(rank), file, at);
  if (k < 0 || k >= int64_t(programs.size()))
    fail(file, at,
         "program " + std::to_string(k) + " does not exist (" +
             std::to_string(programs.size()) + " programs)");
  std::string path = "programs[" + std::to_string(k) + "]";
  const json &program = programs[k];
  if (!program.is_object())
    fail(file, path, "expected an object");
  for (const char *key : {"rank", "coords", "program"})
    if (program.contains(key))
      fail(file, path + "." + key,
           "a program is shared by ranks: rank_programs and the mesh give "
           "each rank's number and coordinates");
  return program;
}

json rankView(const json &plan, int64_t rank, const std::string &file) {
  MeshShape mesh = MeshShape::fromJson(member(plan, "mesh", file, ""), file);
  const json &program = programOf(plan, rank, file, mesh);
  int64_t k = plan["rank_programs"][rank].get<int64_t>();
  std::string path = "programs[" + std::to_string(k) + "]";
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
  MeshShape mesh = MeshShape::fromJson(member(plan, "mesh", file, ""), file);
  json ranks = json::array();
  for (int64_t r = 0; r < mesh.size(); ++r)
    if (rank < 0 || r == rank)
      ranks.push_back(rankView(plan, r, file));
  if (rank >= mesh.size())
    fail(file, "rank_programs",
         "rank " + std::to_string(rank) + " is not in the mesh of " +
             std::to_string(mesh.size()) + " devices");
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
