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
#include "weft/runtime/Plan.h"

#include <map>
#include <string>
#include <vector>

namespace weft::rt {

/// One executed instruction, for the Chrome/Perfetto trace (microseconds).
struct TraceEvent {
  std::string name, kernel;
  int64_t step = 0, rank = 0;
  double startUs = 0, durationUs = 0;
};

class Executor {
public:
  Executor(const Plan &plan, int64_t rank, Backend &backend);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Loads every parameter and state buffer from the plan's ONNX model.
  /// Throws Error naming the initializer on a missing tensor, a dtype or
  /// shape mismatch, or an unreadable external data file.
  void loadWeights();

  /// Copies one input's bytes (dtype and shape as the plan declares).
  void setInput(const std::string &name, const std::string &bytes);

  /// Runs the instruction list once. `trace`, when given, receives one
  /// event per instruction.
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
  void measureLiveness();

  const Plan &plan;
  const RankPlan &rankPlan;
  Backend &backend;
  char *arena = nullptr;
  int64_t peak = 0;
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_EXECUTOR_H
