//===- PlanField.h - plan JSON with its path, for messages ------*- C++ -*-===//
//
// Shared by the plan loader's files (Plan.cpp: parsing and per-rank checks;
// PlanMesh.cpp: the checks across ranks): every error names the field.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_LIB_PLANFIELD_H
#define WEFT_RUNTIME_LIB_PLANFIELD_H

#include "weft/runtime/Plan.h"
#include "weft/runtime/PlanView.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace weft::rt::detail {

/// A JSON object and its path in the plan, for messages that name the field.
/// `note` follows the path of every field under it: which instance of a
/// task body an expanded instruction is (" (tasks[7], micro-batch 3)").
class Field {
public:
  Field(const nlohmann::json &value, std::string path, const std::string &file,
        std::string note = "")
      : value(value), path(std::move(path)), file(file), note(std::move(note)) {
  }

  [[noreturn]] void fail(const std::string &message) const {
    throw Error(file + ": " + path + note + ": " + message);
  }

  Field at(const std::string &key) const {
    if (!value.is_object())
      fail("expected an object");
    auto it = value.find(key);
    if (it == value.end())
      fail("missing field '" + key + "'");
    return Field(*it, path.empty() ? key : path + "." + key, file, note);
  }
  bool has(const std::string &key) const {
    return value.is_object() && value.contains(key) && !value[key].is_null();
  }
  Field at(size_t i) const {
    return Field(value[i], path + "[" + std::to_string(i) + "]", file, note);
  }
  size_t size() const {
    if (!value.is_array())
      fail("expected an array");
    return value.size();
  }
  int64_t integer() const {
    if (!value.is_number_integer())
      fail("expected an integer");
    return value.get<int64_t>();
  }
  int64_t nonNegative() const {
    int64_t v = integer();
    if (v < 0)
      fail("expected a non-negative integer, got " + std::to_string(v));
    return v;
  }
  double number() const {
    if (!value.is_number() || !std::isfinite(value.get<double>()))
      fail("expected a finite number");
    return value.get<double>();
  }
  std::string string() const {
    if (!value.is_string())
      fail("expected a string");
    return value.get<std::string>();
  }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> dims;
    for (size_t i = 0; i < size(); ++i)
      dims.push_back(at(i).nonNegative());
    return dims;
  }
  DType dtype() const {
    try {
      return parseDType(string());
    } catch (const Error &e) {
      fail(e.what());
    }
  }
  std::vector<int64_t> ids(int64_t count) const {
    std::vector<int64_t> out;
    for (size_t i = 0; i < size(); ++i) {
      int64_t id = at(i).nonNegative();
      if (id >= count)
        at(i).fail("buffer " + std::to_string(id) + " does not exist (" +
                   std::to_string(count) + " buffers)");
      out.push_back(id);
    }
    return out;
  }

  const nlohmann::json &value;
  std::string path;
  const std::string &file;
  std::string note;
};

/// times * x + plus, for a coordinate or micro-batch expression at `e`;
/// fails naming it when the result overflows int64.
inline int64_t affine(const Field &e, int64_t times, int64_t x, int64_t plus,
                      const std::string &where = "") {
  int64_t result;
  if (__builtin_mul_overflow(times, x, &result) ||
      __builtin_add_overflow(result, plus, &result))
    e.fail("the expression overflows 64 bits" + where);
  return result;
}

/// Whether `value` holds, at any depth, an object with one of `keys` (a
/// coordinate or micro-batch expression).
inline bool holdsMember(const nlohmann::json &value,
                        std::initializer_list<const char *> keys) {
  if (value.is_object())
    for (const char *key : keys)
      if (value.contains(key))
        return true;
  if (value.is_array() || value.is_object())
    for (const nlohmann::json &item : value)
      if (holdsMember(item, keys))
        return true;
  return false;
}

/// Buffer or instruction `i` of `program` (a rank's field of it), named by
/// where it was written: `programs[k].buffers[i]`, or in a task-form
/// program the frame template or body instruction it was expanded from.
inline Field originField(const Field &program, const RankPlan &rank,
                         const char *list, size_t i) {
  bool buffer = std::string_view(list) == "buffers";
  if (!buffer)
    i = rank.explicitIndexOf(i);
  if (!rank.origins)
    return program.at(list).at(i);
  const TaskOrigins &o = *rank.origins;
  // A lazy expansion's program holds its own buffers; the rest are written
  // when a field is asked for.
  const nlohmann::json &value =
      !o.lazy ? program.value.at(list)[i]
      : buffer
          ? (o.buffers[i].from < 0 ? program.value.at(list)[i] : o.buffer(i))
          : o.instruction(i);
  return Field(value,
               program.path + "." +
                   (buffer ? o.bufferField(i) : o.instructionField(i)),
               program.file, buffer ? o.bufferNote(i) : o.instructionNote(i));
}

/// Buffer `i` of `rank` (its earlier buffers parsed), checked: its id, a
/// known kind, bytes that hold its shape, an aligned offset inside the
/// arena, a view at its owner's offset.
BufferDesc parseBuffer(const Field &b, size_t i, const RankPlan &rank);
/// Rank `r`'s number, coordinates and the field its program is at.
void placeRank(RankPlan &rank, const MeshShape &mesh, int64_t r,
               const std::string &path);
/// Program `f`'s named lists at rank `r`: parsed from a copy with the
/// rank's coordinates filled in.
void parseNamedListsAt(const Field &f, const MeshShape &mesh, int64_t r,
                       RankPlan &rank);

// A lazily expanded program's instances (PlanInstances.cpp).

/// The operands `ids` of `rank` as a kernel check sees them.
std::vector<OperandPlacement> placed(const RankPlan &rank,
                                     const std::vector<int64_t> &ids);
/// Frame buffer `i` of a lazily expanded program (`lazy`) as a copy of its
/// template's buffer `proto`, parsed at micro-batch `m0`: its id, offset
/// and view moved to its micro-batch. False, adding nothing, where a check
/// of parseBuffer's would fail (the caller parses it for the message).
bool placeFrameBuffer(const BufferDesc &proto, int64_t m0, size_t i,
                      const TaskOrigins &lazy, RankPlan &rank);
/// A body instruction parsed and checked at its first instance in a frame.
struct BodyInstruction {
  Instruction parsed;
  int64_t firstFrameBuffer, postsBefore; ///< of that instance
  const KernelSpec *spec;                ///< a compute instruction's
  /// The operands' offsets (inputs, then outputs) of the copies whose
  /// placement was checked: a frame's instances differ in offsets only by
  /// the slot their micro-batch takes, so few are distinct.
  std::set<std::vector<int64_t>> checkedPlacements;
};
/// Instruction `i` of a lazily expanded program (`lazy`) as a copy of
/// `proto`, an instance of its body instruction in the same frame and
/// without expressions, so alike but for the frame's buffer ids, the
/// micro-batch and a collective's tag: those are moved, and the operands'
/// placement (which slots rotate) checked again. False, adding nothing,
/// where a check of parseInstruction's would fail.
bool copyBodyInstruction(BodyInstruction &proto, size_t i,
                         const TaskOrigins &lazy, RankPlan &rank);

// A one-rank load (loadPlan's onlyRank; PlanOneRank.cpp).

/// The indices of program `f`'s transfers in its explicit form (`lazy`:
/// its lazy expansion's origins, or null for an explicit program).
std::vector<size_t> transferIndices(const Field &f, const TaskOrigins *lazy);
/// Transfer `source` (of program `f`, an incomplete `rank`) at its rank,
/// coordinate expressions evaluated: what pairing and the deadlock
/// simulation read (op, tag, peer, the bytes moved).
Instruction parseTransfer(const Field &source, const Field &f,
                          const MeshShape &mesh, const RankPlan &rank);
/// Rank `r` as a one-rank load's other rank (RankPlan::complete false):
/// program `f`'s own buffers and the named lists at the rank (which ranks
/// write which pieces at --save, which holds the loss), and its
/// transfers (`transfers`: their indices in the explicit program; those
/// holding a coordinate expression go to `sites`, as indices among them).
/// Checked only as far as pairing and the deadlock simulation need: the
/// rank's own process checks the rest.
RankPlan parseTransfers(const Field &f, const MeshShape &mesh, int64_t r,
                        std::shared_ptr<const TaskOrigins> origins,
                        const std::vector<size_t> &transfers,
                        std::vector<size_t> &sites);
/// Transfers `sites` of `rank` (a copy of another rank of its program,
/// placed at its own coordinates) evaluated again at its rank: tags and
/// peers where they are plain coordinate expressions, otherwise parsed
/// again (parseTransfer).
void placeTransfersAt(RankPlan &rank, const Field &f, const MeshShape &mesh,
                      const std::vector<size_t> &sites);
/// The named lists of `rank` (a copy of another rank of program `f`,
/// placed at its own coordinates) at its rank: the shards' indices
/// evaluated again where they are the lists' only coordinate expressions
/// and plain ones (weftc's), otherwise the lists parsed again
/// (parseNamedListsAt).
void placeNamedListsAt(RankPlan &rank, const Field &f, const MeshShape &mesh);
/// Whether rank `r` of `root` may be loaded alone (loadPlan's `onlyRank`):
/// its program's collectives hold no coordinate expression, and every
/// member of each group they run over runs its program.
bool loadableAlone(const nlohmann::json &root, const Plan &plan,
                   const MeshShape &mesh, int64_t r, const std::string &path);

/// The transfers of every rank pair up: each isend has its peer's irecv
/// of the same tag and bytes, in the same position among the transfers
/// between the two.
void checkTransfers(const Plan &plan, const std::vector<Field> &ranks);
/// The mesh and sub-axes agree with the rank count, shards with the mesh,
/// and every member of a collective group runs the same collectives in the
/// same order. `root` is the plan, `ranks` the field of each rank's program.
void checkMesh(const Plan &plan, const Field &root,
               const std::vector<Field> &ranks);

} // namespace weft::rt::detail

#endif // WEFT_RUNTIME_LIB_PLANFIELD_H
