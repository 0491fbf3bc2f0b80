//===- EmitPlan.h - weft IR -> execution plan (JSON) ------------*- C++ -*-===//
//
// Translates a weft module into a version-2 execution plan, the contract
// with weft-run (docs/plan-format.md, docs/plan.schema.json): one program
// per pipeline stage, shared by the stage's tensor- and data-parallel ranks
// (what differs between them is a coordinate expression,
// runtime/include/weft/runtime/PlanView.h), each with its buffers at their
// arena offsets (MemoryPlan), the parameters to load, constants inline, and
// the ordered instruction list.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TARGET_PLAN_EMITPLAN_H
#define WEFT_TARGET_PLAN_EMITPLAN_H

#include "weft/Analysis/MemoryPlan.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <string>

namespace weft {

struct PlanSource {
  std::string path;   ///< the ONNX model the runtime loads weights from
  std::string sha256; ///< hex SHA-256 of that file's bytes
};

/// Emits the plan of `module`'s `@main`. Fails (with a diagnostic) on IR the
/// plan cannot express, e.g. a non-static type.
struct PlanOptions {
  /// Write a program's micro-batch work as task bodies where an instance
  /// repeats (docs/plan-format.md, "Task bodies"); else every instruction.
  bool taskBodies = true;
};

/// A plan as emission makes it: every field, with `programs` empty, and
/// each program already printed (printProgramText), so the plan is never
/// held as JSON values at once (at GPT-3 scale ten times its text).
struct PlanParts {
  nlohmann::json plan;
  std::vector<std::string> programs;
};

/// The plan of `module`, printed program by program; the stages are
/// emitted in parallel. Fails (with a diagnostic) on IR the plan cannot
/// express, e.g. a non-static type.
llvm::FailureOr<PlanParts> emitPlanParts(mlir::ModuleOp module,
                                         const PlanSource &source,
                                         MemoryPlans *memory = nullptr,
                                         const PlanOptions &options = {});

/// The plan `parts` print, as one JSON value.
nlohmann::json planJson(const PlanParts &parts);

/// Writes `parts` as printPlan writes the whole plan, releasing each
/// program's text once written.
void printPlan(PlanParts &&parts, llvm::raw_ostream &os);

/// `memory` holds the functions' memory plans when the caller planned them
/// already; else emission plans each.
llvm::FailureOr<nlohmann::json> emitPlan(mlir::ModuleOp module,
                                         const PlanSource &source,
                                         MemoryPlans *memory = nullptr);

/// Writes a plan for people and line tools alike: top-level and per-rank
/// fields one per line, and each buffer, parameter, constant and instruction
/// as one compact JSON object per line.
void printPlan(const nlohmann::json &plan, llvm::raw_ostream &os);

/// `value` as compact JSON text. ONNX names are arbitrary bytes and JSON
/// strings UTF-8: an invalid sequence is written as U+FFFD instead of
/// aborting the writer.
std::string jsonText(const nlohmann::json &value);

/// Hex SHA-256 of a file's bytes; empty when it cannot be read.
std::string sha256File(llvm::StringRef path);

} // namespace weft

#endif // WEFT_TARGET_PLAN_EMITPLAN_H
