//===- NameFailedPass.cpp - say which pass failed -------------------------===//

#include "weft/Transforms/NameFailedPass.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"

void weft::NameFailedPass::runAfterPassFailed(mlir::Pass *pass,
                                              mlir::Operation *) {
  // The innermost pass fails first; the adaptors running it then fail too.
  if (reported)
    return;
  reported = true;
  std::string message = "pass '" + pass->getArgument().str() + "'";
  if (llvm::StringRef about = pass->getDescription(); !about.empty())
    message += " (" + about.str() + ")";
  report(message + " failed: its messages are above");
}

mlir::LogicalResult
weft::runPasses(mlir::PassManager &pm, mlir::Operation *op, bool verifyEach,
                mlir::TimingScope &timing,
                const std::function<void(const std::string &)> &report) {
  pm.enableVerifier(verifyEach);
  pm.addInstrumentation(std::make_unique<NameFailedPass>(report));
  if (mlir::failed(pm.run(op)))
    return mlir::failure();
  if (verifyEach)
    return mlir::success();
  mlir::TimingScope step = timing.nest("verification");
  if (mlir::succeeded(mlir::verify(op)))
    return mlir::success();
  report("the IR the passes made is invalid (its messages are above); "
         "--verify-each names the pass that made it so");
  return mlir::failure();
}
