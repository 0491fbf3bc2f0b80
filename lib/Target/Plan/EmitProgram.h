//===- EmitProgram.h - one stage function -> one plan program ---*- C++ -*-===//
//
// Private to plan emission. A stage's program is emitted in three walks
// over its function: its buffers (one per value, EmitProgram.cpp), the
// numbers the instructions refer to (collective tags, dropout rng_ids), and
// its instructions, task instance by task instance. In the task form an
// instance that repeats an earlier one (RepeatedInstances.cpp: the same ops
// on its micro-batch's buffers) is not written again: only its
// instructions whose integers grow with the micro-batch (transfer tags, a
// micro-batch's rows of the input) are, for writeTaskBodies to fit.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_TARGET_PLAN_EMITPROGRAM_H
#define WEFT_LIB_TARGET_PLAN_EMITPROGRAM_H

#include "TaskBodies.h"

#include "weft/Analysis/MemoryPlan.h"
#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/ops/OpCheck.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace weft {

/// A stage's program, plus what it contributes to the global input and
/// output lists.
struct ProgramSection {
  nlohmann::json program, inputs, outputs;
  int64_t microBatches = 1;
  std::string text; ///< the program printed, once `program` is dropped
  std::vector<BufferHome> homes; ///< by buffer id
  /// Its task instances, in program order (TaskBodies.h).
  std::vector<TaskInstance> instances;
  /// Per micro-batch, the earlier one whose frame its frame is (its
  /// buffers are then not written), or -1.
  std::vector<int64_t> frameRepeats;
  /// Its constants written once per plan: base64 by SHA-256 (hex).
  std::map<std::string, std::string> sharedConstants;
};

/// The program of `func`, run by every rank of its pipeline stage (tensor
/// and data parallel replicas of it); `memory` is its memory plan;
/// `dropoutCount` the dropouts each micro-batch drew on the stages before.
/// With `repeatInstances`, an instance repeating an earlier one is written
/// as a repeat (TaskInstance::repeats) when the program can take the task
/// form; otherwise every instruction is written.
class ProgramEmitter {
public:
  ProgramEmitter(mlir::func::FuncOp func, const MemoryPlan &memory,
                 int64_t stage, const DeviceMesh &mesh,
                 const std::optional<DeviceMesh> &zeroMesh,
                 std::map<int64_t, int64_t> &dropoutCount,
                 bool repeatInstances);

  mlir::FailureOr<ProgramSection> emit();

private:
  // EmitProgram.cpp
  /// Numbers `v`'s buffer (its JSON is written by writeBuffers).
  mlir::LogicalResult addBuffer(mlir::Value v);
  nlohmann::json bufferJson(int64_t id) const;
  /// Buffer `id` as weft-run's kernel check sees it.
  ops::OperandDesc operandDesc(int64_t id) const;
  /// The program's buffer table: every buffer's JSON but those of a frame
  /// that repeats an earlier micro-batch's (null there).
  void writeBuffers();
  mlir::LogicalResult addArguments();
  void addOutputs();
  /// Numbers collectives (in program order) and the dropout masks drawn
  /// without an rng_id, as the instructions will name them.
  mlir::LogicalResult numberCollectivesAndMasks();
  /// `op`'s instruction, without its buffers' ids checked.
  mlir::FailureOr<nlohmann::json> instruction(mlir::Operation &op);
  /// Appends `op`'s instruction (and the wait of a collective nothing waits
  /// for) to the program; checks a compute instruction as weft-run will.
  mlir::LogicalResult writeInstruction(mlir::Operation &op);
  /// Checks `inst`, `op`'s instruction, as weft-run's loader will when it
  /// is a compute instruction (CheckInstruction.h).
  mlir::LogicalResult checkCompute(mlir::Operation &op,
                                   const nlohmann::json &inst);
  /// Whether `op`'s instruction is followed by its own wait: a collective
  /// nothing waits for (weft-overlap-collectives did not run) completes at
  /// once.
  bool waitsAtOnce(mlir::Operation *op) const;
  /// Checks repeat `op` of the compute instruction written at `written`,
  /// unless an instance of it with the same offsets was checked.
  mlir::LogicalResult checkRepeat(mlir::Operation &op, size_t written);

  // RepeatedInstances.cpp
  /// Splits the ops into task instances and writes them, each repeat as
  /// its instructions that may differ.
  mlir::LogicalResult writeInstances();
  /// The text two instances share exactly when they run the same
  /// instructions on their micro-batches' buffers, up to the integers of
  /// their varying ops (isVarying).
  std::string instanceKey(llvm::ArrayRef<mlir::Operation *> ops,
                          int64_t firstCollective);
  /// Writes `ops` as a repeat of instance `of`; false (nothing written) if
  /// a varying op's instruction differs from its counterpart's in more
  /// than integers.
  mlir::FailureOr<bool> writeRepeat(llvm::ArrayRef<mlir::Operation *> ops,
                                    size_t of, TaskInstance &instance);

  mlir::func::FuncOp func;
  const MemoryPlan &memory;
  int64_t stage;
  const DeviceMesh &mesh;
  const std::optional<DeviceMesh> &zeroMesh;
  std::map<int64_t, int64_t> &dropoutCount;
  bool repeatInstances;

  ProgramSection section;
  nlohmann::json buffers = nlohmann::json::array();
  nlohmann::json instructions = nlohmann::json::array();
  nlohmann::json constants = nlohmann::json::array();
  nlohmann::json params = nlohmann::json::array();
  nlohmann::json state = nlohmann::json::array();
  nlohmann::json optimizerState = nlohmann::json::array();
  nlohmann::json rankInputs = nlohmann::json::array();
  nlohmann::json rankOutputs = nlohmann::json::array();

  /// What a buffer's JSON says, by id.
  struct BufferFacts {
    mlir::RankedTensorType type;
    int64_t offset;
    BufferKind kind;
    int64_t viewOf; ///< the buffer whose bytes it shares, or -1
  };
  std::vector<BufferFacts> facts;
  /// Whether repeated instances are written as repeats (writeInstances):
  /// the program is written in the task form.
  bool repeating = false;
  /// Buffer ids: one per value, in definition order; views point at the
  /// buffer whose bytes they share.
  llvm::DenseMap<mlir::Value, int64_t> bufferId;
  llvm::DenseMap<unsigned, int64_t> storageOwner;
  /// Per buffer id, the id task bodies name it by (writeTaskBodies'
  /// numbering): >= 0 a program buffer (an in-place sum's views of one
  /// accumulator share one), < 0 -(its index in its frame + 1).
  std::vector<int64_t> bodyId;
  llvm::DenseMap<std::pair<int64_t, mlir::Type>, int64_t> programBufferOf;
  std::vector<int64_t> frameSize; ///< buffers per micro-batch frame
  /// A buffer views another micro-batch's frame: no task form.
  bool crossFrame = false;

  llvm::DenseMap<mlir::Operation *, int64_t> collectiveTag;
  /// The rng_id plan emission gave each mask-drawing op without one.
  llvm::DenseMap<mlir::Operation *, int64_t> rngIds;
  /// Each constant's entry (ConstantData.h) but its buffer, by value.
  llvm::DenseMap<mlir::Attribute, nlohmann::json> constantData;
  /// checkRepeat's memo: (written instruction, operand offsets) checked.
  std::unordered_set<std::string> checkedPlacements;
};

} // namespace weft

#endif // WEFT_LIB_TARGET_PLAN_EMITPROGRAM_H
