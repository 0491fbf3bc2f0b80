// A 2-layer gpt (h = 8, 2 heads, s = 4, dropout 0.1) from the weights-free
// export, compiled by weftc under each recompute policy: which ops are
// recomputed, and where.
// RUN: env PYTHONPATH=%weft_pythonpath %python -m weft.examples.gpt_weights_free %t.onnx --layers 2 --hidden 8 --heads 2 --seq 4 --vocab 16 --batch 1
// RUN: weftc %t.onnx --emit=mlir --recompute=none | FileCheck %s --check-prefix=NONE
// RUN: weftc %t.onnx --emit=mlir --recompute=full | FileCheck %s --check-prefix=FULL
// RUN: weftc %t.onnx --emit=mlir --recompute=full --recompute-granularity=layer | FileCheck %s --check-prefix=LAYER
// RUN: weftc %t.onnx --emit=mlir --recompute=selective | FileCheck %s --check-prefix=SEL

// NONE-NOT: #weft.task<R

// Stage granularity (torchgpipe): the whole forward is one region, recomputed
// at once before the first backward op; both layers' GELUs come back before
// any gradient kernel runs. The recomputed loss computes its gradient
// (weft-fold-loss-grad), from the recomputed logits.
// FULL: weft.softmax_cross_entropy %
// FULL-NOT: _grad
// FULL: weft.gelu {{.*}}#weft.task<R
// FULL-NOT: _grad
// FULL: weft.gelu {{.*}}#weft.task<R
// FULL: weft.softmax_cross_entropy_and_grad {{.*}}#weft.task<R

// Layer granularity (Megatron): the layers are the repeated unit of parts
// (attention half + MLP half). Layer 2 is recomputed from its input X2 right
// before its backward, then layer 1 from X1 after layer 2's backward is done.
// X2 is the sum of layer 1's last residual add, which weft-fold-residual-
// layer-norm computes with layer 2's first LayerNorm after the regions are
// cut; the recomputed LayerNorm reads it.
// LAYER: weft.layer_norm %[[X1:[0-9]+]], %arg4, %arg5 {axis = 2 : i64} :
// LAYER: %{{.*}}, %{{.*}}, %{{.*}}, %[[X2:sum[_0-9]*]] = weft.add_layer_norm %{{.*}}, %{{.*}}, %arg16, %arg17 {axis = 2 : i64} :
// LAYER-NOT: #weft.task<R
// LAYER: weft.softmax_cross_entropy %{{[0-9]+}}, %{{[0-9]+}} {ignore_index = -100 : i64, log_sum_exp} :
// (The loss and the final LayerNorm are parts of their own, recomputed
// before their backward; then the layers.)
// LAYER: weft.layer_norm %[[X2]], %arg16, %arg17 {{{.*}}#weft.task<R>}
// LAYER: weft.gelu {{.*}}#weft.task<R
// LAYER: weft.gelu_grad
// LAYER-NOT: #weft.task<R
// LAYER: weft.layer_norm_grad %[[X2]], %arg16
// LAYER: weft.layer_norm %[[X1]], %arg4, %arg5 {{{.*}}#weft.task<R>}
// LAYER: weft.gelu {{.*}}#weft.task<R
// LAYER: weft.gelu_grad
// LAYER-NOT: #weft.task<R
// LAYER: return

// Selective (Megatron): only core attention, QK^T / sqrt(d), mask, softmax
// (one weft.scale_mask_softmax once weft-checkpoint has cut the regions),
// dropout, from the kept Q and K^T; each layer's right before its softmax
// backward. Nothing else (LayerNorm, GELU, linear layers) is recomputed.
// SEL: weft.matmul %[[Q1:[0-9]+]], %[[K1:[0-9]+]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
// SEL: weft.matmul %[[Q2:[0-9]+]], %[[K2:[0-9]+]] : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
// SEL-NOT: #weft.task<R
// SEL: weft.gelu_grad
// SEL: weft.matmul %[[Q2]], %[[K2]] {weft.task = #weft.task<R>}
// SEL-NEXT: weft.scale_mask_softmax {{.*}}#weft.task<R
// SEL-NEXT: weft.dropout {{.*}}#weft.task<R
// SEL-NOT: #weft.task<R
// SEL: weft.scale_mask_softmax_grad
// SEL: weft.gelu_grad
// SEL: weft.matmul %[[Q1]], %[[K1]] {weft.task = #weft.task<R>}
// SEL-NEXT: weft.scale_mask_softmax {{.*}}#weft.task<R
// SEL-NEXT: weft.dropout {{.*}}#weft.task<R
// SEL-NOT: #weft.task<R
// SEL: weft.scale_mask_softmax_grad
// SEL-NOT: #weft.task<R
// SEL: return
