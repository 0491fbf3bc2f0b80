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

def AccumulateMicrobatches : Pass<"weft-accumulate-microbatches",
                                  "mlir::func::FuncOp"> {
  let summary = "Run the differentiated step on M micro-batches, summing gradients";
  let description = [{
    GPipe's micro-batch semantics on one rank: the function (from
    weft-autodiff: loss and parameter gradients of one micro-batch) becomes
    one over the global batch, M times as large in dim 0 of every model
    input. Micro-batch k slices its inputs from the global batch, runs a
    copy of the forward and backward ops (tagged `weft.micro_batch = k`), and
    the step returns the sum of the micro-batch losses scaled by 1/M and the
    sum of their gradients scaled by 1/M, which is the gradient of the
    logged loss. Batch normalisation sees per-micro-batch statistics, and
    its running statistics are updated once per micro-batch, in order (as
    torch running the micro-batches would).

    Pre-condition: the output of weft-autodiff, imported at micro-batch size.
  }];
  let options = [
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Micro-batches per step (M)">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def AppendOptimizer : Pass<"weft-append-optimizer", "mlir::func::FuncOp"> {
  let summary = "Append the parameter update (SGD or AdamW) to a training step";
  let description = [{
    Takes the output of `weft-autodiff` (results: the loss, then one gradient
    per parameter marked `weft.grad`) and appends one in-place update per
    parameter, with PyTorch's semantics and defaults (torch.optim.SGD and
    torch.optim.AdamW). Optimizer state becomes explicit function arguments
    marked `{weft.optimizer_state = "<param>.exp_avg"}` (AdamW: exp_avg and
    exp_avg_sq; SGD with momentum: momentum_buffer), zero at the start of
    training, so the memory planner and the sharded optimizer see it. The
    function then returns the loss followed by the updated parameters and
    state, each marked `{weft.update = "<name>"}`.

    ```mlir
    %p2, %m2, %v2 = weft.adamw %p, %g, %m, %v {lr = 1.0e-3 : f64, ...} : tensor<4xf32>
    ```

    Pre-condition: the function was differentiated by weft-autodiff.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "sgd or adamw">,
    Option<"lr", "lr", "double", /*default=*/"1e-3", "Learning rate">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"-1.0",
           "Weight decay (default: AdamW 0.01, SGD 0, as torch)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.0",
           "SGD momentum">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "SGD Nesterov momentum">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "AdamW beta2">,
    Option<"eps", "eps", "double", /*default=*/"1e-8", "AdamW epsilon">,
  ];
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
