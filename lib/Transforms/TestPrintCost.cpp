//===- TestPrintCost.cpp - print CostOpInterface results ------------------===//

#include "weft/Transforms/Passes.h"

#include "weft/Analysis/CostModel.h"
#include "weft/Dialect/Weft/IR/Task.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "llvm/Support/raw_ostream.h"

namespace weft {
#define GEN_PASS_DEF_TESTPRINTCOST
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;
using namespace weft;

namespace {
struct TestPrintCostPass : weft::impl::TestPrintCostBase<TestPrintCostPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    int64_t flops = 0, read = 0, written = 0;
    func.walk([&](CostOpInterface op) {
      llvm::errs() << "cost @" << func.getSymName() << ": " << op->getName()
                   << " flops=" << op.getFlops()
                   << " read=" << op.getBytesRead()
                   << " written=" << op.getBytesWritten();
      // A GEMM-shaped op's batch x m x n x k, the shape the device model's
      // gemm_efficiency table is keyed by (bench/megatron_table4.py reads
      // a layer's shapes from it).
      if (std::optional<GemmShape> g = gemmShapeOf(op))
        llvm::errs() << " gemm=" << g->batch << "x" << g->m << "x" << g->n
                     << "x" << g->k;
      // The task's kind letter (F, B, R, U, W) once tasks exist, so a
      // breakdown can split the forward from the backward.
      if (taskOf(op))
        llvm::errs() << " task=" << taskKindLetter(taskKindOf(op));
      llvm::errs() << "\n";
      flops += op.getFlops();
      read += op.getBytesRead();
      written += op.getBytesWritten();
    });
    llvm::errs() << "cost @" << func.getSymName() << ": total flops=" << flops
                 << " read=" << read << " written=" << written << "\n";
    markAllAnalysesPreserved();
  }
};
} // namespace
