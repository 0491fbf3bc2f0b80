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

def Autodiff : Pass<"weft-autodiff", "mlir::func::FuncOp"> {
  let summary = "Append the backward pass: the gradient of every parameter";
  let description = [{
    Turns a model function whose single result is a scalar float loss into
    one that also returns the gradient of the loss with respect to every
    parameter argument (`weft.param`), by reverse-mode differentiation: ops
    are visited in reverse order and each op's `GradientOpInterface` rule
    turns its result gradients into operand gradients; a value used several
    times accumulates (adds) the gradients of its uses. Only values that
    depend on a parameter and have a float type get gradients, so integer,
    shape and constant paths produce no backward ops.

    Input:
    ```mlir
    func.func @main(%x: tensor<2x3xf32> {weft.input = "x"},
                    %w: tensor<3x1xf32> {weft.param = "w"}) -> tensor<f32> {
      %y = weft.matmul %x, %w : ...
      %l = weft.reduce_mean %y {axes = array<i64: 0, 1>, keepdims = false} : ...
      return %l : tensor<f32>
    }
    ```
    Output: the same ops, then the backward ops, and
    `return %l, %dw : tensor<f32>, tensor<3x1xf32>` with the gradient result
    marked `{weft.grad = "w"}`.

    Pre-condition: one result, a scalar float (the loss), and at least one
    parameter the loss depends on; every op on a path from a parameter to the
    loss has a gradient rule. Each violation is an error naming the op.
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
