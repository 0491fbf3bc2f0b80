//===- RunOptions.h - weft-run's command line -----------------*- C++ -*-===//
#ifndef WEFT_RUNTIME_TOOLS_RUNOPTIONS_H
#define WEFT_RUNTIME_TOOLS_RUNOPTIONS_H

#include "weft/runtime/TextData.h"

#include <cstdint>
#include <string>

namespace weft::rt {

/// weft-run's flags, as parsed (defaults as the usage text states).
struct RunOptions {
  std::string plan, calibrate, data = "synthetic", logJson, trace, dumpOutputs,
                               save, checkpoint, resume, device = "cpu";
  int64_t saveEvery = 0, keep = 1;
  TextData::Split split = TextData::Split::Train;
  double holdout = 0.1;
  std::string tokens = "tokens", targets = "targets";
  bool stopOnNan = true, reshard = false, stageTransfers = false,
       allowTf32 = false, check = false;
  double timeout = 300;
  uint64_t seed = 0;
  int64_t steps = 1;
  int threads = 1;
  bool view = false;     ///< --view: print the rank views and exit
  int64_t viewRank = -1; ///< --view-rank: only this rank's (-1: all)
  int64_t checkRank = -1; ///< --check-rank: as this rank loads (-1: all)
  /// --explicit: print the plan with its task-form programs expanded, exit
  bool explicitForm = false;
};

/// Parses argv; prints the usage and exits 0 on --help. Throws Error naming
/// the flag on an unknown flag, a missing or malformed value, or a
/// contradiction (--save-every without --checkpoint, --reshard without
/// --resume).
RunOptions parseOptions(int argc, char **argv);

} // namespace weft::rt

#endif // WEFT_RUNTIME_TOOLS_RUNOPTIONS_H
