//===- WeftOps.cpp - weft op verification and result-type inference -------===//
//
// The type rules of the ops that lower to no kernel (constant, reshape) and
// the verifiers of attributes no kernel rule reads. An op that lowers to a
// kernel infers its result types by the kernel's rule (Weft_KernelTypedOp,
// KernelContract.h): the output-shape rule of the ONNX operator it mirrors
// (ONNX opset 17 operator spec), written once in runtime/lib/specs; the
// importer cross-checks it against ONNX shape inference.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace weft;

namespace {
using Types = SmallVectorImpl<Type>;

RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type elementType) {
  return RankedTensorType::get(shape, elementType);
}

/// Checks an axis attribute that the importer normalised to [0, rank).
LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                        int64_t rank) {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " out of range [0, ", rank,
                             ")");
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>,
                                           Adaptor adaptor, Types &out) {
  out.push_back(cast<TypedAttr>(adaptor.getValue()).getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Normalisation, activation with an axis, dropout
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return checkAxis(getLoc(), getAxis(), getType().getRank());
}
LogicalResult LogSoftmaxOp::verify() {
  return checkAxis(getLoc(), getAxis(), getType().getRank());
}

LogicalResult TriluOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("expects rank >= 2, got ") << getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> shape = adaptor.getShape();
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return emitOptionalError(loc, "reshape target dims must be resolved "
                                    "and non-negative");
    count *= d;
  }
  if (count != input.getNumElements())
    return emitOptionalError(loc, "reshape of ", input, " (",
                             input.getNumElements(), " elements) to ", count,
                             " elements");
  out.push_back(tensorOf(shape, input.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (llvm::all_of(llvm::enumerate(perm),
                   [](auto p) { return p.value() == int64_t(p.index()); }))
    return getInput();
  // Result dim i is the inner input's dim inner[perm[i]]: the pair cancels
  // when that is i for every i, else is one transpose of the inner input
  // (folded in place: one copy, not two).
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  ArrayRef<int64_t> innerPerm = inner.getPerm();
  SmallVector<int64_t> composed;
  for (int64_t p : perm)
    composed.push_back(innerPerm[p]);
  if (llvm::all_of(llvm::enumerate(composed),
                   [](auto p) { return p.value() == int64_t(p.index()); }))
    return inner.getInput();
  setPerm(composed);
  getInputMutable().assign(inner.getInput());
  return getResult();
}

#define GET_OP_CLASSES
#include "weft/Dialect/Weft/IR/WeftOps.cpp.inc"
