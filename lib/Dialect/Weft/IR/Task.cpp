//===- Task.cpp - #weft.task and the task attributes' verifier ------------===//

#include "weft/Dialect/Weft/IR/Task.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace weft;

char weft::taskKindLetter(TaskKind kind) {
  switch (kind) {
  case TaskKind::Forward:
    return 'F';
  case TaskKind::Backward:
    return 'B';
  case TaskKind::Recompute:
    return 'R';
  case TaskKind::Update:
    return 'U';
  case TaskKind::Weight:
    return 'W';
  }
  llvm_unreachable("unknown task kind");
}

StringRef weft::phaseName(TaskKind kind) {
  switch (kind) {
  case TaskKind::Forward:
    return "forward";
  case TaskKind::Backward:
  case TaskKind::Recompute:
    return "backward";
  case TaskKind::Weight:
    return "weight";
  case TaskKind::Update:
    return "optimizer";
  }
  llvm_unreachable("unknown task kind");
}

// #weft.task<B, micro_batch = 3, stage = 1>: the kind, then the fields set.
Attribute TaskAttr::parse(AsmParser &parser, Type) {
  StringRef letter;
  if (parser.parseLess() || parser.parseKeyword(&letter))
    return {};
  auto kind = llvm::StringSwitch<std::optional<TaskKind>>(letter)
                  .Case("F", TaskKind::Forward)
                  .Case("B", TaskKind::Backward)
                  .Case("R", TaskKind::Recompute)
                  .Case("U", TaskKind::Update)
                  .Case("W", TaskKind::Weight)
                  .Default(std::nullopt);
  if (!kind) {
    parser.emitError(parser.getCurrentLocation(),
                     "a task's kind is F, B, R, U or W, not '")
        << letter << "'";
    return {};
  }
  TaskFields fields;
  fields.kind = *kind;
  llvm::SmallVector<StringRef, 3> seen;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef name;
    int64_t value = 0;
    SMLoc at = parser.getCurrentLocation();
    if (parser.parseKeyword(&name) || parser.parseEqual() ||
        parser.parseInteger(value))
      return {};
    if (llvm::is_contained(seen, name)) {
      parser.emitError(at, "a task's '") << name << "' is given twice";
      return {};
    }
    seen.push_back(name);
    if (name == "micro_batch")
      fields.microBatch = value;
    else if (name == "stage")
      fields.stage = value;
    else if (name == "chunk")
      fields.chunk = value;
    else {
      parser.emitError(at, "a task's fields are micro_batch, stage and "
                           "chunk, not '")
          << name << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<TaskAttr>(parser.getContext(), fields.kind,
                                     fields.microBatch, fields.stage,
                                     fields.chunk);
}

void TaskAttr::print(AsmPrinter &printer) const {
  printer << '<' << taskKindLetter(getKind());
  if (std::optional<int64_t> mb = getMicroBatch())
    printer << ", micro_batch = " << *mb;
  if (std::optional<int64_t> stage = getStage())
    printer << ", stage = " << *stage;
  if (getChunk() != 0)
    printer << ", chunk = " << getChunk();
  printer << '>';
}

LogicalResult TaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               TaskKind kind, std::optional<int64_t> microBatch,
                               std::optional<int64_t> stage, int64_t chunk) {
  if (microBatch && *microBatch < 0)
    return emitError() << "a task's micro_batch is non-negative, not "
                       << *microBatch;
  if (stage && *stage < 0)
    return emitError() << "a task's stage is non-negative, not " << *stage;
  if (chunk < 0)
    return emitError() << "a task's chunk is non-negative, not " << chunk;
  if (kind == TaskKind::Update && microBatch)
    return emitError() << "an optimizer update (U) belongs to no "
                          "micro-batch, but has micro_batch = "
                       << *microBatch;
  return success();
}

namespace {

/// The value of an index attribute: an i64 at least `least`; nullopt for
/// anything else (whose own verification says so).
std::optional<int64_t> indexValue(Attribute attr, int64_t least = 0) {
  auto index = dyn_cast_or_null<IntegerAttr>(attr);
  if (!index || !index.getType().isSignlessInteger(64) ||
      index.getInt() < least)
    return std::nullopt;
  return index.getInt();
}

/// A pipelined function's ops against its stage count and, on a stage
/// function, its stage and micro-batch count: one walk of the function
/// here rather than a lookup of the function per op.
LogicalResult verifyPipelinedFunction(Operation *func, int64_t stages) {
  std::optional<int64_t> ownStage = indexValue(func->getAttr(kStageAttr));
  std::optional<int64_t> microBatches =
      indexValue(func->getAttr(kMicroBatchesAttr), 1);
  // A rank running model chunks: chunk c's ops are on stage chunkStages[c].
  auto chunkStages = func->getAttrOfType<DenseI64ArrayAttr>(kChunkStagesAttr);
  // A stage function runs a chunk's micro-batch as F, then B, then W: per
  // (micro-batch, chunk), the latest of those seen so far.
  int64_t chunks = chunkStages ? chunkStages.size() : 1;
  std::vector<TaskKind> reached;
  if (ownStage && microBatches)
    reached.assign(*microBatches * chunks, TaskKind::Forward);
  auto order = [](TaskKind kind) {
    return kind == TaskKind::Forward ? 0 : kind == TaskKind::Weight ? 2 : 1;
  };
  for (Region &region : func->getRegions())
    for (Block &block : region)
      for (Operation &op : block) {
        TaskAttr task = taskOf(&op);
        // weft-schedule placed every op of a stage function in a task:
        // one without is a pass's mistake. Constants are each stage's
        // copies, made before the step.
        if (!op.hasAttr(kTaskAttr) && ownStage && !isa<ConstantOp>(op) &&
            !op.hasTrait<OpTrait::IsTerminator>())
          return op.emitOpError("has no '")
                 << kTaskAttr << "' in the function of stage " << *ownStage;
        if (!task)
          continue;
        if (std::optional<int64_t> stage = task.getStage()) {
          if (*stage >= stages)
            return op.emitOpError("is on stage ")
                   << *stage << " of a function with " << stages
                   << " pipeline stages";
          int64_t chunk = task.getChunk();
          if (chunkStages) {
            if (chunk >= int64_t(chunkStages.size()) ||
                chunkStages[chunk] != *stage)
              return op.emitOpError("is chunk ")
                     << chunk << " on stage " << *stage
                     << ", in the function of rank " << ownStage.value_or(0)
                     << " whose chunks are stages "
                     << llvm::interleaved(chunkStages.asArrayRef());
          } else if (ownStage && (*stage != *ownStage || chunk != 0)) {
            return op.emitOpError("is on stage ")
                   << *stage
                   << (chunk ? " (chunk " + std::to_string(chunk) + ")"
                             : std::string())
                   << ", in the function of stage " << *ownStage;
          }
        }
        std::optional<int64_t> mb = task.getMicroBatch();
        if (mb && microBatches && *mb >= *microBatches)
          return op.emitOpError("belongs to micro-batch ")
                 << *mb << " of a step with " << *microBatches
                 << " micro-batches";
        // Transfers are posted early and waited for late by design.
        TaskKind kind = task.getKind();
        if (reached.empty() || !mb || kind == TaskKind::Update ||
            task.getChunk() >= chunks || isa<IRecvOp, WaitSendOp>(op))
          continue;
        TaskKind &latest = reached[*mb * chunks + task.getChunk()];
        if (order(kind) < order(latest))
          return op.emitOpError("runs ")
                 << phaseName(kind) << " work (" << task
                 << ") after that micro-batch's " << phaseName(latest)
                 << " work on this rank: each chunk runs a micro-batch's F, "
                 << "then its B, then its W";
        latest = kind == TaskKind::Recompute ? TaskKind::Backward : kind;
      }
  return success();
}

} // namespace

LogicalResult weft::verifyTaskAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kTaskAttr) {
    if (!isa<TaskAttr>(attr.getValue()))
      return op->emitOpError("'")
             << kTaskAttr << "' must be a #weft.task<...>, not "
             << attr.getValue();
    return success();
  }
  if (name == kStageAttr) {
    if (!isa<FunctionOpInterface>(op))
      return op->emitOpError("'")
             << kStageAttr << "' is a stage function's; an op's stage is in "
             << "its '" << kTaskAttr << "'";
    if (!indexValue(attr.getValue()))
      return op->emitOpError("'")
             << kStageAttr << "' must be a non-negative index, not "
             << attr.getValue();
    return success();
  }
  if (name == kPipelineStagesAttr) {
    std::optional<int64_t> stages = indexValue(attr.getValue(), 1);
    if (!stages)
      return op->emitOpError("'")
             << kPipelineStagesAttr << "' must be a positive i64, not "
             << attr.getValue();
    return verifyPipelinedFunction(op, *stages);
  }
  return success();
}
