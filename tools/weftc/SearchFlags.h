//===- SearchFlags.h - weftc --auto-parallel's flags and driver -*- C++ -*-===//
//
// `--auto-parallel --devices N [--global-batch B] [--top K] [--explain]`:
// reads the model once (its loss and batch), scores every layout with
// AutoParallel.h's search, prints the table, and sets the layout flags
// (LayoutFlags.h) to the layout it picks, which weftc then compiles as if
// given by hand.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_SEARCHFLAGS_H
#define WEFT_TOOLS_WEFTC_SEARCHFLAGS_H

#include "weft/Import/ONNX/ImportONNX.h"
#include "weft/Transforms/Pipelines.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <optional>
#include <string>

namespace weftc {

extern llvm::cl::opt<bool> autoParallel;

/// The weftc flags the search reads.
struct SearchFlags {
  llvm::StringRef inputFile, outputFile, deviceModel;
  int64_t memoryCap = 0; ///< bytes; 0: the device model's memory
  bool sixteenBit = false;
};
/// weftc's flags as the pipeline's and the importer's options; false after
/// an error naming a flag.
using FillOptions = llvm::function_ref<bool(weft::PlanPipelineOptions &,
                                            weft::ImportOptions &)>;

/// --auto-parallel: scores the layouts of --devices N, prints the --top K
/// and sets the layout flags to the fastest that fits (`shapes`: the input
/// shapes --global-batch sets). The exit status when weftc is done: an
/// error, or no -o to compile the layout to.
std::optional<int>
searchLayoutFlags(llvm::MemoryBuffer &model, const SearchFlags &flags,
                  FillOptions fillOptions,
                  std::map<std::string, llvm::SmallVector<int64_t>> &shapes);

} // namespace weftc

#endif // WEFT_TOOLS_WEFTC_SEARCHFLAGS_H
