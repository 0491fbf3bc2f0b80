//===- WeftOptimizerOps.td - parameter update ops ------------*- tablegen -*-===//
//
// Updates are in place: each result's bytes are its aliased operand's
// (`param`, and the optimizer state), which the memory plan and the runtime
// honour. The step number t (1-based) that bias correction needs is the
// runtime's step counter, not an operand.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTOPTIMIZEROPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTOPTIMIZEROPS_TD

def Weft_AdamWOp : Weft_Op<"adamw", [AttrSizedOperandSegments]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<12>;
  // The parameter, then its state past the gradient.
  let inPlace = [Weft_InPlace<0, 0>, Weft_InPlace<1, 2>, Weft_InPlace<2, 3>,
                 Weft_InPlace<3, 4>];
  let summary = "One AdamW step, torch.optim.AdamW semantics (amsgrad off).";
  let description = [{
    Loshchilov & Hutter, "Decoupled Weight Decay Regularization" (ICLR 2019),
    as torch.optim.AdamW computes it at step t:
    ```
    p = p * (1 - lr * weight_decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    ```
    Results alias `param`, `exp_avg`, `exp_avg_sq` and `master` (in place).

    Mixed precision (Micikevicius et al., "Mixed Precision Training", ICLR
    2018; the ZeRO paper's (2 + 2 + 12)Ψ): with a `master` operand the
    parameter and its gradient are f16/bf16 and the step runs on the f32
    master copy (the gradient widened), which the f32 moments accompany;
    the new parameter is the new master rounded to nearest even. Without
    one, every operand has the parameter's type.

    Dynamic loss scaling (f16; torch.cuda.amp.GradScaler): with `scaler`
    (the loss scaler's state, `weft.update_loss_scale`) and `found_inf`, the
    gradient is of the loss times the scale: the step divides it by the
    scale (in f32), and is skipped entirely, nothing written, when
    `found_inf` is nonzero; t counts the steps not skipped, as torch's
    optimizer state does when GradScaler skips `optimizer.step()`.
    Cost: 12 FLOPs per parameter element.
  }];
  let arguments = (ins Weft_FloatTensor:$param, Weft_FloatTensor:$grad,
                       Weft_FloatTensor:$exp_avg, Weft_FloatTensor:$exp_avg_sq,
                       Optional<Weft_FloatTensor>:$master,
                       Optional<Weft_FloatTensor>:$scaler,
                       Optional<Weft_FloatTensor>:$found_inf,
                       F64Attr:$lr, F64Attr:$beta1, F64Attr:$beta2, F64Attr:$eps,
                       F64Attr:$weight_decay);
  let results = (outs Weft_FloatTensor:$new_param, Weft_FloatTensor:$new_exp_avg,
                      Weft_FloatTensor:$new_exp_avg_sq,
                      Optional<Weft_FloatTensor>:$new_master);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq (`master` $master^)?
    (`scaler` $scaler^)? (`found_inf` $found_inf^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_SGDOp : Weft_Op<"sgd", [AttrSizedOperandSegments]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = PerInput<4>;
  let inPlace = [Weft_InPlace<0, 0>, Weft_InPlace<1, 2>, Weft_InPlace<2, 3>];
  let summary = "One SGD step, torch.optim.SGD semantics (dampening 0).";
  let description = [{
    ```
    g = g + weight_decay * p
    b = g at step 1, else momentum * b + g      (only with momentum_buffer)
    g = g + momentum * b if nesterov, else b    (only with momentum_buffer)
    p = p - lr * g
    ```
    With `momentum` 0 there is no buffer operand. Results alias `param`,
    `momentum_buffer` and `master` (in place). A `master` operand makes it
    mixed precision, `scaler` and `found_inf` loss-scaled, as AdamW's.
    Cost: 4 FLOPs per parameter element.
  }];
  let arguments = (ins Weft_FloatTensor:$param, Weft_FloatTensor:$grad,
                       Optional<Weft_FloatTensor>:$momentum_buffer,
                       Optional<Weft_FloatTensor>:$master,
                       Optional<Weft_FloatTensor>:$scaler,
                       Optional<Weft_FloatTensor>:$found_inf,
                       F64Attr:$lr, F64Attr:$momentum, F64Attr:$weight_decay,
                       BoolAttr:$nesterov);
  let results = (outs Variadic<Weft_FloatTensor>:$updated);
  let assemblyFormat = [{
    $param `,` $grad (`,` $momentum_buffer^)? (`master` $master^)?
    (`scaler` $scaler^)? (`found_inf` $found_inf^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_FoundInfOp : Weft_Op<"found_inf", [Pure], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let minInputs = 1;
  let maxInputs = 1048576; // 2^20 gradients
  let summary = "1 when any element of the gradients is not finite, else 0.";
  let description = [{
    GradScaler's `_unscale_grads_` check (torch.amp.grad_scaler): the f32
    scalar 1.0 when an element of any operand is +-inf or NaN, 0.0 when
    all are finite. Data-parallel, tensor-parallel and ZeRO layouts take its
    maximum over the mesh so every rank skips the same steps. Cost: 1 FLOP
    per element read.
  }];
  let arguments = (ins Variadic<Weft_FloatTensor>:$grads);
  let results = (outs Weft_FloatTensor:$found);
  let assemblyFormat = "$grads attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Weft_UpdateLossScaleOp : Weft_Op<"update_loss_scale", [], CustomFlops> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = CustomFlopRule;
  let inPlace = [Weft_InPlace<0, 0>];
  let summary = "GradScaler.update: back off on overflow, grow after a run.";
  let description = [{
    The loss scaler's state is `[scale, growth_tracker, skipped_steps]`
    (f32; integers are exact in f32 far beyond any run). With `found_inf`
    nonzero: scale *= backoff_factor, growth_tracker = 0, skipped_steps +=
    1; else growth_tracker += 1, and when it reaches growth_interval, scale
    *= growth_factor and growth_tracker = 0 (torch.amp's
    `_amp_update_scale_`; defaults 2.0, 0.5, 2000, initial scale 2^16).
    The result aliases `scaler` (in place). Cost: 4 FLOPs.
  }];
  let arguments = (ins Weft_F32Tensor:$scaler, Weft_F32Tensor:$found_inf,
                       F64Attr:$growth_factor, F64Attr:$backoff_factor,
                       I64Attr:$growth_interval);
  let results = (outs Weft_F32Tensor:$new_scaler);
  let assemblyFormat = [{
    $scaler `,` $found_inf attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Weft_AssignOp : Weft_Op<"assign", [AllTypesMatch<["dest", "value",
                                                      "result"]>]> {
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
  let inPlace = [Weft_InPlace<0, 0>];
  let summary = "Write `value` into `dest`'s bytes (in place).";
  let description = [{
    The sharded optimizer (ZeRO, `weft-data-parallel` with `zero-stage`)
    updates a flat shard of a bucket's parameters and all-gathers it; each
    parameter's part is assigned back into the parameter's own buffer. The
    result aliases `dest`. Cost: 0 FLOPs, the bytes read and written.
  }];
  let arguments = (ins Weft_Tensor:$dest, Weft_Tensor:$value);
  let results = (outs Weft_Tensor:$result);
  let assemblyFormat = "$dest `,` $value attr-dict `:` type($dest)";
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTOPTIMIZEROPS_TD
