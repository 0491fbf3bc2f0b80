//===- OptimizerPasses.td - the optimizer step's passes ----*- tablegen -*-===//
//
// Included by Passes.td (one pass registry, Passes.h.inc).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_OPTIMIZERPASSES_TD
#define WEFT_TRANSFORMS_OPTIMIZERPASSES_TD

include "mlir/Pass/PassBase.td"

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

def ClipGradNorm : Pass<"weft-clip-grad-norm", "mlir::func::FuncOp"> {
  let summary = "Scale the gradients to a global 2-norm of at most max-norm";
  let description = [{
    `torch.nn.utils.clip_grad_norm_(parameters, max_norm)` before the
    updates: the 2-norm of every parameter's gradient taken together,
    `total = sqrt(sum over parameters of sum(g * g))`, and each gradient the
    updates read multiplied by `min(1, max_norm / (total + 1e-6))`. On a
    mesh, as Megatron-LM's `clip_grad_norm_fp32`: each pipeline rank sums
    the squares of the gradients its updates read (a ZeRO piece, a tensor
    shard), weighting a copy that several ranks hold by 1 / their number
    (data-parallel replicas, or the groups of ZeRO's pieces; tensor ranks
    for a parameter that is not a tensor shard; a parameter updated on
    several stages counts on its lowest), then all-reduces the sum over the
    data, tensor and pipeline axes. Sums in f32 (f64 for an f64 model).
    The new ops are the update task's (`#weft.task<U>`) on the rank's
    first stage; the updates move after them.

    Runs after `weft-data-parallel` and `weft-insert-send-recv` (the
    gradients the updates read are the averaged ones, and each rank's
    updates are known). Errors: `max-norm` not finite or not positive; no
    updates.
  }];
  let options = [
    Option<"maxNorm", "max-norm", "double", /*default=*/"0",
           "The largest global gradient 2-norm (torch's max_norm)">,
  ];
  let dependentDialects = ["weft::WeftDialect", "mlir::shard::ShardDialect"];
}

#endif // WEFT_TRANSFORMS_OPTIMIZERPASSES_TD
