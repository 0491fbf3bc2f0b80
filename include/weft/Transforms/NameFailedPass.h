//===- NameFailedPass.h - say which pass failed -----------------*- C++ -*-===//
//
// MLIR's pass manager reports a pass's own errors and the verifier's, but
// not which pass was running. When a pass leaves IR that does not verify
// (e.g. a kernel op weft-run would refuse: KernelContract.h), the op's
// message alone does not say which of weft-plan-pipeline's passes built it.
// This instrumentation names it once, for the innermost failing pass.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_TRANSFORMS_NAMEFAILEDPASS_H
#define WEFT_TRANSFORMS_NAMEFAILEDPASS_H

#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"

#include <functional>
#include <string>

namespace weft {

/// Calls `report` with "pass 'ARG' (DESCRIPTION) failed: its messages are
/// above" for the first pass that fails or leaves IR that does not verify;
/// the nested pass managers that fail with it are not reported again.
class NameFailedPass : public mlir::PassInstrumentation {
public:
  explicit NameFailedPass(std::function<void(const std::string &)> report)
      : report(std::move(report)) {}

  void runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) override;

private:
  std::function<void(const std::string &)> report;
  bool reported = false;
};

/// Runs `pm` on `op`. With `verifyEach`, the IR is verified after every
/// pass and a failing pass is named (NameFailedPass); otherwise it is
/// verified once, after the last pass (timed under `timing` as
/// "verification"), and an invalid result is reported as "the IR the
/// passes made is invalid (its messages are above); --verify-each names the
/// pass that made it so". weftc verifies once: after each pass of an
/// unrolled GPT-3 step the verifier took a third of the compile (18 of 48 s,
/// bench/compile_scale.py). Fails when a pass fails or the IR is invalid.
mlir::LogicalResult
runPasses(mlir::PassManager &pm, mlir::Operation *op, bool verifyEach,
          mlir::TimingScope &timing,
          const std::function<void(const std::string &)> &report);

} // namespace weft

#endif // WEFT_TRANSFORMS_NAMEFAILEDPASS_H
