//===- PrecisionPasses.td - mixed precision passes ----------*- tablegen -*-===//
//
// Included by Passes.td (one pass registry, Passes.h.inc).
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_TRANSFORMS_PRECISIONPASSES_TD
#define WEFT_TRANSFORMS_PRECISIONPASSES_TD

include "mlir/Pass/PassBase.td"

def MixedPrecision : Pass<"weft-mixed-precision", "mlir::func::FuncOp"> {
  let summary = "Make matmuls, convolutions and activations 16-bit";
  let description = [{
    Mixed-precision training (Micikevicius et al., "Mixed Precision
    Training", ICLR 2018) on the forward graph, before `weft-autodiff`,
    which then derives a backward of the same precision (a cast's gradient
    is the cast back). With `precision=bf16` (or `f16`):

    - the f32 parameters become 16-bit working copies; `weft-append-
      optimizer` gives each an f32 master copy in the optimizer state (the
      ZeRO paper's (2 + 2 + 12)Ψ bytes of model state);
    - each op gets the operand precision of torch.autocast's CUDA lists
      (aten/src/ATen/autocast_mode.cpp; the torch.amp docs, "Op-Specific
      Behavior"): matmul, gemm, conv and
      conv_transpose run in 16 bits (f32 operands cast down; the kernels
      accumulate in f32); softmax, log_softmax, layer and batch norm, the
      losses, reduce_sum and reduce_mean, exp, log, pow and reciprocal run
      in f32 (16-bit operands cast up); binary ops, where and concat run in
      their widest operand's type, a rank-0 operand (a scalar) not counting
      beside a tensor (torch's type promotion); every other op runs in its
      operand's type, so activations (GELU, ReLU, dropout, pooling) stay
      16-bit between a matmul and the next f32 op;
    - a LayerNorm, RMSNorm or softmax between 16-bit ops then reads and
      writes 16 bits, with no cast around it: its kernels load 16 bits,
      compute in f32 and round once, the cast chain's bits (Megatron-LM's
      and Apex's fused LayerNorm and scale-mask-softmax). A softmax read
      through one dropout (attention's) runs that dropout in 16 bits too,
      Megatron-LM's order; autocast's dropout scales f32 probabilities. The
      cross-entropy loss reads 16-bit logits;
    - results keep the types the function declares (a cast back where needed);
    - with `fp32-residual`, each gather of a parameter (an embedding
      lookup) is cast up to f32, so the sums it feeds (the residual stream
      of a transformer) run in f32 by promotion while the blocks' matmuls
      stay 16-bit (Megatron-LM's `--fp32-residual-connection`);
    - with `loss-scaling` (f16 training; torch.cuda.amp.GradScaler), an
      argument `{weft.optimizer_state = "loss_scaler", weft.loss_scaler}`
      of type tensor<3xf32> holds [scale, growth_tracker, skipped_steps]
      (2^16, 0, 0 at the start): weft-autodiff seeds the backward with the
      scale, weft-loss-scaling unscales, skips steps whose gradients
      overflow and updates the scale.

    Casts are `weft.cast` ops the memory plan sees and the runtime runs.
    Only f32 values change (an f64 model is an error); `precision=f32`
    changes nothing.

    ```mlir
    %w16 = weft.cast %w {to = bf16}   // in fact: %w becomes tensor<..xbf16>
    %y = weft.matmul %x16, %w16 : ... -> tensor<8x16xbf16>
    %z = weft.cast %y {to = f32}
    %s = weft.softmax %z : tensor<8x16xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"f32\"",
           "bf16, f16 or f32">,
    Option<"lossScaling", "loss-scaling", "bool", /*default=*/"false",
           "Add the loss scaler's state (f16 training), which seeds the "
           "backward with the scale">,
    Option<"fp32Residual", "fp32-residual", "bool", /*default=*/"false",
           "Embedding lookups' results in f32, so the residual stream "
           "they start stays f32 (Megatron-LM's "
           "--fp32-residual-connection)">,
  ];
  let dependentDialects = ["weft::WeftDialect"];
}

def LossScaling : Pass<"weft-loss-scaling", "mlir::func::FuncOp"> {
  let summary = "GradScaler's check, unscale, skip and scale update (f16)";
  let description = [{
    Dynamic loss scaling (torch.amp.GradScaler; Micikevicius et al., "Mixed
    Precision Training", ICLR 2018, §3.2) for a step whose backward
    weft-autodiff seeded with the loss scaler's scale (the argument
    `{weft.loss_scaler}` weft-mixed-precision adds for f16 training). Runs
    once the updates read what they will read: after weft-data-parallel
    (averaged gradients, or ZeRO's pieces, each rank seeing only its own)
    and weft-insert-send-recv (each stage's updates on its stage). On each
    pipeline stage:

    - `weft.found_inf` of the gradients the stage's updates read, placed
      after the last of them; its maximum over the data, tensor and
      pipeline axes of size > 1 (`shard.all_reduce` max), so every rank
      skips the same steps (FSDP's ShardedGradScaler all-reduces the same
      way);
    - the updates take the scaler and the verdict (they unscale in f32 and
      skip the step on overflow) and move, with what reads them, after the
      verdict: every update waits for every gradient, as GradScaler's
      `unscale_` precedes `step`;
    - `weft.update_loss_scale` (GradScaler's defaults: x2 after 2000 steps,
      x0.5 on overflow) last; each stage keeps its own copy of the scaler,
      all updated alike, returned as `{weft.update = "loss_scaler"}`.

    Without the argument it does nothing.
  }];
  let dependentDialects = ["weft::WeftDialect", "mlir::shard::ShardDialect"];
}

#endif // WEFT_TRANSFORMS_PRECISIONPASSES_TD
