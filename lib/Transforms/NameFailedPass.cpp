//===- NameFailedPass.cpp - say which pass failed -------------------------===//

#include "weft/Transforms/NameFailedPass.h"

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
