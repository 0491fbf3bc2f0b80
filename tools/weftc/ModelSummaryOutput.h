//===- ModelSummaryOutput.h - weftc --emit=summary[-json] ------*- C++ -*-===//
//
// The model summary (weft/Analysis/ModelSummary.h) as weftc prints it: a
// table for people, JSON for scripts.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TOOLS_WEFTC_MODELSUMMARYOUTPUT_H
#define WEFT_TOOLS_WEFTC_MODELSUMMARYOUTPUT_H

#include "weft/Analysis/ModelSummary.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

namespace weft {

/// The summary of the model at `source` as a table: parameters, frozen and
/// state bytes, input bytes per batch, forward FLOPs per batch, op counts.
void printSummary(const ModelSummary &s, llvm::StringRef source,
                  llvm::raw_ostream &os);

/// The same figures as JSON (bytes, FLOPs; `ops`: count by op name), with
/// the bytes the forward reads and writes.
nlohmann::json summaryJSON(const ModelSummary &s);

} // namespace weft

#endif // WEFT_TOOLS_WEFTC_MODELSUMMARYOUTPUT_H
