//===- TestPasses.td - test-only printers ------------------*- tablegen -*-===//
//
// Included by Passes.td (one pass registry, Passes.h.inc). Each prints what
// an analysis computes, for lit tests; none changes the IR.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_TESTPASSES_TD
#define WEFT_TRANSFORMS_TESTPASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintTaskOrders : Pass<"weft-test-print-task-orders",
                                "mlir::ModuleOp"> {
  let summary = "Print each rank's task order under a pipeline schedule";
  let description = [{
    Test-only printer of `weft/Analysis/TaskOrder.h`: for `schedule` (gpipe,
    1f1b, interleaved, zb-h1, zb-h2, zb-v), `ranks` P, `microbatches` M and
    `virtual-stages` V (interleaved's chunks), prints to stdout one line per
    rank, its tasks as kind, chunk and micro-batch (`F0.3`: the forward of
    chunk 0 for micro-batch 3; `W1.2`: a weight gradient), then the stage
    each chunk runs and the simulated bubble fraction and rank-0 idle time
    for T_F = T_B = T_W (uniform stages, free transfers). The IR is
    unchanged. A layout the schedule refuses, or an order that deadlocks,
    is an error naming why.

    Output for `schedule=zb-h1 ranks=2 microbatches=3`:
    ```
    zb-h1 P=2 M=3 rank 0 (stages 0): F0.0 F0.1 B0.0 W0.0 F0.2 B0.1 W0.1 B0.2 W0.2
    zb-h1 P=2 M=3 rank 1 (stages 1): F0.0 B0.0 F0.1 B0.1 W0.0 F0.2 B0.2 W0.1 W0.2
    ```
  }];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "Pipeline schedule">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"2", "Pipeline ranks P">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"4",
           "Micro-batches M">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"2",
           "Model chunks per rank V (interleaved)">,
  ];
}

def TestPrintCost : Pass<"weft-test-print-cost", "mlir::func::FuncOp"> {
  let summary = "Print each op's cost (FLOPs, bytes) and the function total";
  let description = [{
    Test-only printer for `CostOpInterface`, so lit tests can check cost
    rules against hand-computed numbers. Prints to stderr, one line per op
    that implements the interface, then a total; the IR is unchanged. A
    GEMM-shaped op's line adds ` gemm=BxMxNxK` (batch, m, n, k: the shape
    the device model's `gemm_efficiency` is keyed by); an op with a
    `weft.task` ends ` task=K`, K its task's kind letter.

    Input:
    ```mlir
    func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
      %0 = weft.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
      return %0 : tensor<2x4xf32>
    }
    ```
    Output (stderr):
    ```
    cost @f: weft.matmul flops=48 read=56 written=32
    cost @f: total flops=48 read=56 written=32
    ```
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

def TestPrintMemory : Pass<"weft-test-print-memory", "mlir::func::FuncOp"> {
  let summary = "Print the static arena layout (MemoryPlan) of a function";
  let description = [{
    Test-only printer for the memory planner: one line per storage (a region
    of the arena shared by a value and its reshape views) with its kind,
    offset, size and live steps, then the arena size. Prints to stderr; the IR
    is unchanged.

    ```
    memory @f: storage 2 activation offset=0 bytes=64 live=[0,1]
    memory @f: arena_bytes=192
    ```
  }];
  let dependentDialects = ["weft::WeftDialect"];
}

#endif // WEFT_TRANSFORMS_TESTPASSES_TD
