//===- Executor.h - runs one rank's instruction list ------------*- C++ -*-===//
//
// The executor owns a rank's arena (one allocation of the plan's
// arena_bytes), fills it with constants, weights and inputs at the offsets the
// compiler chose, and runs the instruction list on a Backend. It never
// allocates tensors outside the arena and never re-plans.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_EXECUTOR_H
#define WEFT_RUNTIME_EXECUTOR_H

#include "weft/runtime/Backend.h"
#include "weft/runtime/Communicator.h"
#include "weft/runtime/Plan.h"
#include "weft/runtime/Shard.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weft::rt {

struct KernelContext;

/// One executed instruction, for the Chrome/Perfetto trace (microseconds).
struct TraceEvent {
  std::string name, kernel; ///< kernel: the compute kernel or transfer op
  std::string phase;        ///< forward, backward, weight, optimizer
  int64_t microBatch = 0;
  bool transfer = false; ///< isend/irecv/wait_send/wait_recv
  /// A collective in flight: from its post to the end of its wait.
  bool collective = false;
  /// The post or the wait of a collective (kernel "post all_reduce",
  /// "wait all_reduce"): the time this rank spends in its calls, the part
  /// of the collective compute did not hide.
  bool collectiveCall = false;
  std::string axis; ///< collective, collectiveCall: its mesh axis
  int64_t step = 0, rank = 0;
  double startUs = 0, durationUs = 0;
  KernelCost cost; ///< compute: the kernel table's FLOPs and bytes;
                   ///< collective: bytesRead = the bytes each rank sends in
  int64_t chunk = -1; ///< the instruction's model chunk, or -1 (Plan.h)
};

class Executor {
public:
  /// Runs rank `rank` of `plan`; `comm` carries its transfers (null: a
  /// single-rank plan, whose transfers would be an error).
  Executor(const Plan &plan, int64_t rank, Backend &backend,
           Communicator *comm = nullptr);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Loads every parameter and state buffer from the plan's ONNX model.
  /// Throws Error when the model's SHA-256 is not the plan's model.sha256
  /// (when the plan records one), or naming the initializer on a missing
  /// tensor, a dtype or shape mismatch, or an unreadable external data file.
  void loadWeights();

  /// Writes the trained model as one ONNX file (`--save`): a copy of the
  /// plan's model with every parameter and state initializer this rank
  /// holds replaced by its current value. Ranks take turns (the order is the
  /// caller's): the first reads the plan's model, the others `temp`; all but
  /// the last write `temp`, the last writes `path` (atomically, Files.h) and
  /// removes `temp`, so `path` is never partial and never holds another
  /// rank's stale values. A rank writes its ZeRO pieces (flat shards) of
  /// parameters, and its other tensors only when `replicaZero`.
  void exportModel(const std::string &path, const std::string &temp, bool first,
                   bool last, bool replicaZero) const;

  /// One tensor this rank trains or keeps across steps.
  struct StateTensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  /// Every parameter, state (batch-norm statistics, frozen) and optimizer
  /// state tensor of this rank, with its current bytes: a checkpoint shard.
  std::vector<StateTensor> snapshot() const;
  /// The f16 loss scaler's state [scale, growth_tracker, skipped_steps]
  /// (GradScaler), when the plan has one.
  std::optional<std::array<float, 3>> lossScaler() const;
  /// Writes the tensor `name` of those lists. Throws Error naming it when
  /// this rank has no such tensor or the byte count differs from the plan.
  void restore(const std::string &name, const std::string &bytes);
  /// The names snapshot() returns, in its order.
  std::vector<std::string> stateNames() const;
  /// One tensor's dtype and which piece of the model's whole tensor this
  /// rank holds.
  struct TensorPiece {
    std::string name;
    DType dtype;
    PieceDesc piece;
  };
  /// Every tensor snapshot() returns, in its order: what a checkpoint's
  /// manifest records.
  std::vector<TensorPiece> pieces() const;
  /// Writes this rank's piece of `bytes`, the whole tensor `name` (dtype
  /// and shape as pieces() gives them). Throws Error naming it when this
  /// rank has no such tensor or the byte count differs.
  void restoreWhole(const std::string &name, const std::string &bytes);

  /// Copies one input's bytes (dtype and shape as the plan declares).
  void setInput(const std::string &name, const std::string &bytes);

  /// Overwrites one parameter's bytes (dtype and shape as the plan
  /// declares): for tests, and for weights that arrive from elsewhere.
  void setParameter(const std::string &name, const std::string &bytes);

  /// Runs the instruction list once: compute on the backend's compute
  /// stream, transfers and collectives on the communicator, posted on the
  /// comm stream after an event on the compute stream (their producers),
  /// the compute stream waiting on the comm stream after each wait (driven
  /// between instructions while a collective is in flight). `trace`, when
  /// given, receives one event per instruction, and one per collective
  /// spanning its post to its wait; kernels are timed by backend events
  /// (device time), not by synchronising after each.
  void run(int64_t step, uint64_t seed, std::vector<TraceEvent> *trace);

  /// Bytes of a plan output after run().
  std::string output(const std::string &name) const;
  const BufferDesc &outputBuffer(const std::string &name) const;

  /// The highest arena byte covered by a buffer live at some instruction,
  /// measured by walking the instruction list (buffer live from its first
  /// write to its last read; arguments, constants and outputs all step).
  int64_t peakBytes() const { return peak; }
  int64_t arenaBytes() const { return rankPlan.arenaBytes; }

private:
  Tensor view(int64_t buffer) const;
  /// The kernel call of compute instruction `inst` in context `ctx` (its
  /// index, this step), which the call refers to: `ctx` must outlive it.
  KernelCall callOf(const Instruction &inst, const KernelContext &ctx) const;
  /// Launches instructions [first, after), a run of one kernel, together.
  void launchRun(size_t first, size_t after, int64_t step, uint64_t seed);
  void transfer(const Instruction &inst);
  void write(const NamedBuffer &named, const std::string &bytes,
             const std::string &what);
  /// Copies the initializers of `model` named by `buffers` into the arena.
  void loadInitializers(const std::string &modelPath,
                        const std::vector<NamedBuffer> &buffers,
                        const std::string &what);
  void measureLiveness();
  /// Parameters, state and optimizer state: what a checkpoint holds.
  std::vector<const NamedBuffer *> stateBuffers() const;

  const Plan &plan;
  const RankPlan &rankPlan;
  Backend &backend;
  std::unique_ptr<Communicator> ownComm; ///< when none was given
  Communicator *comm;
  char *arena = nullptr;
  int64_t peak = 0;
  /// The hand-offs between the streams: compute -> comm before a post,
  /// comm -> compute after a wait.
  std::unique_ptr<Event> produced, arrived;
  /// Tracing: a start and an end per instruction, then the step's origin.
  std::vector<std::unique_ptr<Event>> timing;
  /// Per instruction: one past the run of consecutive instructions of its
  /// kernel the backend launches together (launchesGrouped), or itself + 1.
  /// Fixed by the plan and the backend, so found once.
  std::vector<size_t> runEnd;
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_EXECUTOR_H
