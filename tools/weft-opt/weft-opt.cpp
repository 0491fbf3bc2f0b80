//===- weft-opt.cpp - the weft pass driver --------------------------------===//
//
// mlir-opt with the weft dialect, every weft pass and weft-plan-pipeline
// (weftc's compile) registered, plus the upstream canonicalize/cse passes.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Transforms/Passes.h"
#include "weft/Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<weft::WeftDialect, mlir::func::FuncDialect,
                  mlir::shard::ShardDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  weft::registerWeftPasses();
  weft::registerPlanPipeline();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "weft pass driver\n", registry));
}
