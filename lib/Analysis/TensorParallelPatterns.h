//===- TensorParallelPatterns.h - what the split recognises ---*- C++ -*-===//
//
// Private to lib/Analysis: the structural patterns the tensor-parallel walk
// (TensorParallel.cpp) asks about: linears and their weights, fused
// projections' blocks, vocab tables and their loss, what opens a block.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_ANALYSIS_TENSORPARALLELPATTERNS_H
#define WEFT_LIB_ANALYSIS_TENSORPARALLELPATTERNS_H

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>

namespace weft::tp {

/// "'<ONNX node>' (<op name>)", or the op name, for messages.
std::string nodeOf(mlir::Operation *op);
int64_t rankOf(mlir::Value v);
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);
/// `axis` in [0, rank) (ONNX's negative axes count from the end).
int64_t normalized(int64_t axis, int64_t rank);

/// A trainable parameter used by exactly one op.
bool isOwnedParam(mlir::Value v);

/// The weight operand of a linear: a 2-D parameter, or its transpose
/// (torch.nn.Linear's export), used only here. Returns the parameter.
mlir::BlockArgument weightParam(mlir::Value rhs);

/// Independent blocks in a column linear's output features: k when the
/// output (after a bias add, and reshapes that keep the features last, as
/// Hugging Face's Conv1D [b s, 3h] -> [b, s, 3h]) is only cut into k equal
/// parts along them (a fused QKV projection: a split, or slices of equal
/// width), else 1.
int64_t fusedBlocks(mlir::Value y);

/// A linear layer: a matmul [.., K] x [K, N] or a gemm (ONNX Gemm, e.g.
/// nn.MultiheadAttention's output projection, Hugging Face's Conv1D) whose
/// weight is a 2-D parameter of its own (weightParam).
struct Linear {
  mlir::Value x, w;   ///< activation, weight operand (param or transpose)
  int64_t kDim, nDim; ///< the weight operand's input, output feature dims
  mlir::Value bias;   ///< gemm's C, or null
};
std::optional<Linear> linearOf(mlir::Operation *op);

/// The softmax cross-entropy `scores` feeds after the ops a head's logits
/// pass (bias adds of its own, reshapes keeping the classes last), if it is
/// one vocab parallelism computes: mean over 2-D scores, no class weights.
SoftmaxCrossEntropyOp headLoss(mlir::Value scores);

/// A vocab table: a 2-D trainable parameter whose every use is a word
/// embedding lookup (gather along rows by model input ids) or the LM
/// head's weight (its transpose times the hidden states, into a loss
/// headLoss accepts), with rows `parts` divides. Returns the op that starts
/// its block (the first use), or null.
mlir::Operation *vocabTableStart(mlir::BlockArgument arg, int64_t parts);

/// The elementwise ops (numpy broadcasting, no reduction).
bool isElementwise(mlir::Operation *op);

/// Whether a linear's output reaches another linear through the ops a
/// block is made of: then it opens a Megatron block, and a failure to split
/// it is the user's business. The walk passes normalizations (a LayerNorm
/// inside an MLP must be reported, not hidden) but stops at a residual
/// connection (an add or sub of an activation from outside the walk): an LM
/// head (logits -> loss) or an input projection (-> + positions -> layers)
/// reaches none.
bool opensBlock(mlir::Operation *column);

} // namespace weft::tp

#endif // WEFT_LIB_ANALYSIS_TENSORPARALLELPATTERNS_H
