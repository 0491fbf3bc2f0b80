//===- PlanView.h - a version-2 plan's programs, seen per rank --*- C++ -*-===//
//
// A version-2 plan (docs/plan-format.md) holds one program per role, not
// one instruction list per rank: `programs[k]` runs on every rank r with
// `rank_programs[r] == k` (weftc writes one per pipeline stage, shared by
// the stage's tensor- and data-parallel ranks). What differs between the
// ranks of a program is written as a coordinate expression,
//
//   {"coord": AXIS, "times": A, "plus": B}   ->   A * coord(AXIS) + B
//
// (A defaults to 1, B to 0), AXIS a mesh axis (`pipeline`, `data`,
// `tensor`), a sub-axis (`data_shard`, `data_replica`), or `replica`: the
// rank's row-major index over the axes other than `pipeline` (its index
// among the ranks of its stage). Expressions may stand for an integer in a
// shard's or flat shard's `index`, an instruction's `peer` and `tag`, and
// an integer attribute or an element of an integer-array attribute.
//
// The rank view of rank r is its program with every expression evaluated
// at r's coordinates, plus `rank` and `coords`: the per-rank object of
// version 1. A task-form program (PlanTasks.h) is viewed expanded, in the
// explicit form. The loader checks the views; `weft-run --view` and
// `weftc --emit=plan-json` print them (for people, diffs and FileCheck).
//
// MLIR-free: weftc links it (weft_ops) and prints the same views.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_PLANVIEW_H
#define WEFT_RUNTIME_PLANVIEW_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace weft::rt {

/// The plan format version weftc writes and weft-run reads.
inline constexpr int kPlanVersion = 2;

/// Kinds of an instruction's `op` (docs/plan-format.md, "Instructions"):
/// weftc numbers collective posts with the same predicate weft-run checks.
inline bool isTransfer(const std::string &op) {
  return op == "isend" || op == "irecv" || op == "wait_send" ||
         op == "wait_recv";
}
inline bool isTransferWait(const std::string &op) {
  return op == "wait_send" || op == "wait_recv";
}
inline bool isCollective(const std::string &op) {
  return op == "all_reduce" || op == "all_gather" || op == "reduce_scatter";
}
inline bool isCollectiveWait(const std::string &op) {
  return op == "wait_collective";
}

/// A plan's mesh as its JSON gives it (`mesh.axes`, `mesh.sub_axes`), with
/// the coordinates of a rank. Ranks are the row-major index of their
/// coordinates over `axes` (the last axis fastest).
struct MeshShape {
  std::vector<std::pair<std::string, int64_t>> axes;
  struct Sub {
    std::string name, of;
    int64_t size = 1, stride = 1;
  };
  std::vector<Sub> subAxes;

  /// Reads `mesh` (axes with sizes >= 1); throws Error naming the field.
  static MeshShape fromJson(const nlohmann::json &mesh,
                            const std::string &file);
  int64_t size() const;
  std::vector<int64_t> coords(int64_t rank) const;
  /// The coordinate of `rank` along an axis, a sub-axis or `replica`;
  /// throws Error when the mesh has no such axis.
  int64_t coord(int64_t rank, const std::string &axis) const;
};

/// Evaluates, in place at `rank`, the coordinate expressions where the
/// format allows them: in `program`'s named lists (the shards of params,
/// optimizer_state, inputs), and in one instruction (peer, tag, attrs).
/// `path` names the program or the instruction in messages. Throws Error on
/// a malformed expression, an unknown axis, an overflow, or a micro-batch
/// expression (`per_micro_batch`: only a task body's, which expandTasks
/// evaluates).
void resolveNamedLists(nlohmann::json &program, const MeshShape &mesh,
                       int64_t rank, const std::string &file,
                       const std::string &path);
void resolveInstruction(nlohmann::json &inst, const MeshShape &mesh,
                        int64_t rank, const std::string &file,
                        const std::string &path);

/// Whether `value` holds a coordinate expression (or a micro-batch one,
/// for resolveInstruction to refuse).
bool hasCoordinates(const nlohmann::json &value);

/// The field that holds rank `rank`'s program `program`, for messages:
/// "programs[k]", or "rank r: programs[k]" when `shared` by several ranks.
std::string programPath(int64_t program, int64_t rank, bool shared);

/// The program rank `rank` runs, checked: rank_programs lists one program
/// per rank of `mesh`, the rank's exists and is an object without `rank`,
/// `coords` or `program`. Throws Error naming the field.
const nlohmann::json &programOf(const nlohmann::json &plan, int64_t rank,
                                const std::string &file, const MeshShape &mesh);

/// Rank `rank`'s view of a version-2 plan (the version-1 rank object), in
/// the explicit form (a task-form program expanded). Throws Error naming
/// the field (with `file`) on a missing program, a malformed expression, an
/// unknown axis or a malformed task form.
nlohmann::json rankView(const nlohmann::json &plan, int64_t rank,
                        const std::string &file);

/// The plan with `ranks` (every rank's view, or only `rank`'s when it is
/// not negative) in place of `programs` and `rank_programs`, and `format`
/// "weft-plan-view": for reading, not for running.
nlohmann::json planView(const nlohmann::json &plan, int64_t rank,
                        const std::string &file);

/// Writes a plan or a view for people and line tools alike: top-level,
/// per-program and per-rank fields one per line, and each buffer,
/// parameter, constant and instruction as one compact JSON object per line.
/// `programs`, when given, stand for the plan's `programs` (which the plan
/// may then leave empty): each one printProgramText's text, so a writer
/// need not hold every program as JSON at once.
std::string printPlanText(const nlohmann::json &plan,
                          const std::vector<std::string> *programs = nullptr);
/// One program as printPlanText prints it inside `programs`.
std::string printProgramText(const nlohmann::json &program);

/// `value` as compact JSON text; invalid UTF-8 (ONNX names are arbitrary
/// bytes) is written as U+FFFD instead of aborting the writer.
std::string compactJson(const nlohmann::json &value);

} // namespace weft::rt

#endif // WEFT_RUNTIME_PLANVIEW_H
