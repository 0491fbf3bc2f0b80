//===- AutoParallel.h - weftc --auto-parallel: the layout search -*- C++
//-*-===//
//
// `weftc MODEL --auto-parallel --devices N --device-model D` enumerates the
// layouts of a training step on N devices and scores each by compiling it:
// weft-plan-pipeline, the pipeline simulator (the predicted step) and the
// memory planner (each rank's arena, byte-exact as weft-run allocates it).
// A layout is Megatron-LM's degrees (Narayanan et al. 2021, Section 3):
// tensor T, pipeline P, data D = N / (T P), and what each stage does:
// micro-batches, schedule (and chunks per rank), recompute (Korthikanti et
// al. 2022), sequence parallelism, ZeRO stage (Rajbhandari et al. 2020),
// flash attention. `--explain` scores a layout given by hand the same way.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_AUTOPARALLEL_H
#define WEFT_TOOLS_WEFTC_AUTOPARALLEL_H

#include "weft/Analysis/CostModel.h"
#include "weft/Analysis/GradientBuckets.h"
#include "weft/Analysis/MemoryBreakdown.h"
#include "weft/Analysis/PartitionCosts.h"
#include "weft/Analysis/Schedule.h"
#include "weft/Import/ONNX/ImportONNX.h"
#include "weft/Transforms/Pipelines.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft {

/// One layout: the degrees and each stage's choices, as weftc's flags take
/// them.
struct Layout {
  int64_t pipeline = 1, tensor = 1, data = 1;
  int64_t microbatches = 1;
  ScheduleKind schedule = ScheduleKind::OneFOneB;
  int64_t virtualStages = 2;         ///< chunks per rank (interleaved, zb-v)
  std::string recompute = "none";    ///< none, selective or full
  std::string granularity = "stage"; ///< full recompute's regions
  bool sequenceParallel = false;
  int64_t zeroStage = 0;
  bool flashAttention = false;

  int64_t devices() const { return pipeline * tensor * data; }
  /// weftc's flags for it ("--pipeline-parallel=2 --microbatches=8 ..."),
  /// those at their defaults left out.
  std::string flags() const;
  /// The table's short form: "P2 T1 D1 M8 1f1b selective".
  std::string brief() const;
  bool operator==(const Layout &other) const;
};

/// What the search ranges over.
struct SearchSpace {
  int64_t devices = 1; ///< N = T x P x D
  int64_t batch = 1;   ///< the global batch (dim 0 of the model's inputs)
  /// T's bound: a node's devices (tensor collectives stay on its links, as
  /// Megatron-LM keeps them).
  int64_t maxTensor = 1;
  /// The pipeline's stages' bound (P times the chunks per rank): the
  /// model's repeated layers (RepeatedLayers.h), as Megatron-LM's stages
  /// each hold whole layers; 0: no bound (nothing repeats).
  int64_t maxStages = 0;
};

/// Every layout of `space`: T dividing N and at most maxTensor; P dividing
/// N / T; D = N / (T P) dividing the batch; M dividing the batch / D; for
/// P > 1 each schedule (interleaved with 2 and 3 chunks per rank) whose
/// stages (P times the chunks) are at most maxStages; recompute
/// none, selective, full by stage and full by layer; with T > 1 sequence
/// parallelism off and on; with D > 1 ZeRO stages 0 to 3; flash attention
/// off and on (not with selective recompute, whose core attention flash
/// attention already recomputes). Layouts the compiler rejects (heads not
/// divisible by T, a schedule that needs M a multiple of P, ...) are scored as
/// errors.
std::vector<Layout> enumerateLayouts(const SearchSpace &space);

/// A compiled layout's figures. Times are seconds of one step; the five
/// parts say where the critical rank's step goes (the rank with the most
/// compute): compute (FLOP-bound ops' roofline time), memory (bandwidth-
/// bound ops'), bubble (waiting on other stages), and the tensor and data
/// axes' collectives exposed (the step minus the step simulated with that
/// axis's collectives free).
struct LayoutScore {
  Layout layout;
  std::string error; ///< non-empty: the layout does not compile (why)
  double stepSeconds = 0;
  double samplesPerSecond = 0; ///< the global batch / step (the search's)
  double mfu = 0, hfu = 0;     ///< fractions (Korthikanti et al. 2022, Sec. 6)
  int64_t peakBytes = 0;       ///< the largest rank's planned arena
  int64_t peakRank = 0;
  MemoryBreakdown breakdown; ///< that rank's bytes at its peak
  double compute = 0, memory = 0, bubble = 0, tensorComm = 0, dataComm = 0;
  /// Estimated from its class's profile (LayoutEstimate.h), not compiled.
  bool estimated = false;

  bool compiled() const { return error.empty(); }
  /// The largest part: "compute", "memory", "bubble", "tensor comm" or
  /// "data comm".
  llvm::StringRef bound() const;
};

struct StepProfile;

/// Compiles `layout` (its options already in `pipelineOptions` and
/// `importOptions`) in a context of its own and scores it on `device`.
/// Diagnostics are kept, not printed: the first error becomes `error`.
/// `sixteenBit`: MFU against the 16-bit peak (--precision bf16|f16).
/// `profile`: also filled with the step's profile (a one-stage layout's).
/// `imported`: when not empty, the model as importShortModel gave it (MLIR
/// bytecode), compiled in place of `model`'s import.
LayoutScore scoreLayout(const Layout &layout, llvm::StringRef model,
                        llvm::StringRef source, bool onnxText,
                        const ImportOptions &importOptions,
                        PlanPipelineOptions &pipelineOptions,
                        const DeviceModel &device, bool sixteenBit,
                        StepProfile *profile = nullptr,
                        llvm::StringRef imported = {});

/// `model` imported and cut to the first `layers` copies of its repeated
/// layer (truncateRepeatedLayers), as MLIR bytecode: the estimate's
/// profiles share one import of a few layers, not one of the whole model
/// each. Empty, with the reason in `error`, when the import fails or the
/// model has no layer to cut.
std::string importShortModel(llvm::StringRef model, llvm::StringRef source,
                             bool onnxText, const ImportOptions &importOptions,
                             int64_t layers, std::string &error);

/// The search's outcome: every score, those that compile and fit `capBytes`
/// (0: no cap) first, fastest first (ties: the smaller peak).
struct SearchResult {
  std::vector<LayoutScore> scores;
  int64_t fitting = 0; ///< leading scores that compile and fit
  int64_t failed = 0;  ///< scores that did not compile
};
SearchResult rankLayouts(std::vector<LayoutScore> scores, int64_t capBytes);

/// The prefix of a LayoutScore's `error` when the compile failed with IR
/// that does not verify: a weft bug, not a layout the compiler rejects.
inline constexpr llvm::StringLiteral kInvalidIR =
    "invalid IR (a weft bug, please report it)";

/// Under the search's summary: the layouts of `scores` that do not compile,
/// grouped by their error's first line less its numbers, the `reasons`
/// most frequent with their count and one layout's message and flags
/// each, most frequent first.
void printCompileFailures(llvm::ArrayRef<LayoutScore> scores,
                          llvm::raw_ostream &os, size_t reasons = 6);

/// The table of `rows`: rank, layout, step ms, samples/s, MFU and HFU %,
/// peak bytes, the five parts in ms and the bound; `first` numbers the rows.
void printLayoutTable(llvm::ArrayRef<LayoutScore> rows, llvm::raw_ostream &os,
                      int64_t first = 1);

/// The error when nothing fits `capBytes`: the smallest peak among the
/// layouts that compile, its layout, and its largest memory category.
std::string nothingFits(const SearchResult &result, int64_t capBytes);

/// How the search scores layouts: by compiling each, or by estimating
/// each from its class's profile and compiling the most promising
/// (LayoutEstimate.h). Auto compiles each when there are at most
/// kCompileEach layouts.
enum class SearchMode { Auto, Compile, Estimate };
inline constexpr size_t kCompileEach = 400;
/// The estimate profiles a model of at least 3 kShortLayers layers on its
/// first kShortLayers and kShortLayers + 1 (the first one apart: the
/// embedding's gradient ends in it) and extrapolates.
inline constexpr int64_t kShortLayers = 2;

struct SearchRequest {
  SearchSpace space;
  SearchMode mode = SearchMode::Auto;
  /// Estimated: the most layouts compiled to confirm the estimate's order.
  int64_t confirm = 16;
  int64_t capBytes = 0; ///< a device's memory, bytes (0: no cap)
  int64_t top = 5;      ///< rows of the table
  /// --explain: a layout given by hand, shown beside the best.
  std::optional<Layout> explain;
  DeviceModel device;
  bool sixteenBit = false;
  /// Estimated: profiles from a few layers, extrapolated (kShortLayers).
  bool shortProfiles = true;
  /// Estimated: the model's forward segments as the pipeline partitioner
  /// weighs them (segmentCosts), whose cut gives each stage its share of
  /// the work; empty: even stages.
  PartitionCosts segments;
  /// --optimizer-shard-threshold, bytes: ZeRO-3 gathers the parameters at
  /// least that large.
  int64_t shardThresholdBytes = int64_t(kShardThresholdKb * 1024);
  /// --bucket-cap-mb, bytes: the largest data-parallel gradient bucket.
  int64_t bucketCapBytes = int64_t(kBucketCapMb * (1 << 20));
};

/// Compiles a layout for a step of `batch` samples (0: the search's) and
/// scores it, filling `profile` when given, on the model cut to `layers`
/// repeated layers when > 0 (scoreLayout). Called from several threads at
/// once (the estimate's profiles): it must be safe to.
using CompileLayout = llvm::function_ref<LayoutScore(
    const Layout &layout, int64_t batch, StepProfile *profile, int64_t layers)>;

/// Scores every layout of `request.space` with `compile` (or estimates
/// them, SearchMode), prints a summary line and the top K table to `os`
/// (with `explain`, its row, its place and its parts beside the best's),
/// and returns the fastest compiled layout that fits; an error
/// (nothingFits's) when none does.
llvm::Expected<Layout> searchLayouts(const SearchRequest &request,
                                     CompileLayout compile,
                                     llvm::raw_ostream &os);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_AUTOPARALLEL_H
