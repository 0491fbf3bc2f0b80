//===- Passes.td - weft passes -------------------------------*- tablegen -*-===//

#ifndef WEFT_TRANSFORMS_PASSES_TD
#define WEFT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintCost : Pass<"weft-test-print-cost", "mlir::func::FuncOp"> {
  let summary = "Print each op's cost (FLOPs, bytes) and the function total";
  let description = [{
    Test-only printer for `CostOpInterface`, so lit tests can check cost
    rules against hand-computed numbers. Prints to stderr, one line per op
    that implements the interface, then a total; the IR is unchanged.

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

#endif // WEFT_TRANSFORMS_PASSES_TD
