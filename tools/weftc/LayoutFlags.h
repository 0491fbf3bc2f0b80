//===- LayoutFlags.h - weftc's layout flags ---------------------*- C++ -*-===//
//
// The flags that say how a step is laid out over devices (the degrees,
// micro-batches, schedule, recompute, sequence parallelism, ZeRO, flash
// attention): read by the compile, and set by --auto-parallel to each
// layout it scores and to the one it picks.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_LAYOUTFLAGS_H
#define WEFT_TOOLS_WEFTC_LAYOUTFLAGS_H

#include "AutoParallel.h"

#include "llvm/Support/CommandLine.h"

namespace weftc {

/// The category of every weftc option (`weftc --help` lists these).
llvm::cl::OptionCategory &optionCategory();

extern llvm::cl::opt<int64_t> pipelineParallel, tensorParallel, dataParallel,
    microbatches, virtualStages, zeroStage;
extern llvm::cl::opt<std::string> schedule, recompute, recomputeGranularity;
extern llvm::cl::opt<bool> sequenceParallel, flashAttention;

/// Sets the flags above to `layout`.
void setLayoutFlags(const weft::Layout &layout);
/// The layout the flags above give.
weft::Layout layoutOfFlags();

} // namespace weftc

#endif // WEFT_TOOLS_WEFTC_LAYOUTFLAGS_H
