//===- WeftCost.cpp - CostOpInterface implementations ---------------------===//
//
// FLOP conventions (stated in CostOpInterface): a multiply-add is 2 FLOPs,
// elementwise ops cost 1 FLOP per element, data movement costs 0 FLOPs.
// The per-element constants of the composite ops (softmax, layer norm, ...)
// are documented on each op.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/ops/Glu.h"

using namespace mlir;
using namespace weft;

#include "weft/Dialect/Weft/IR/WeftInterfaces.cpp.inc"

int64_t weft::detail::defaultBytesRead(Operation *op) {
  int64_t bytes = 0;
  for (Value v : op->getOperands())
    bytes += byteSize(v.getType());
  return bytes;
}

int64_t weft::detail::defaultBytesWritten(Operation *op) {
  int64_t bytes = 0;
  for (Value v : op->getResults())
    bytes += byteSize(v.getType());
  return bytes;
}

namespace {
int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}
ShapedType shaped(Value v) { return cast<ShapedType>(v.getType()); }
} // namespace

int64_t MatMulOp::getFlops() {
  // Result [..., M, N] with contraction K: each result element is K
  // multiply-adds.
  ArrayRef<int64_t> a = shaped(getLhs()).getShape();
  int64_t k = getTransA() ? a[a.size() - 2] : a.back();
  return 2 * numElements(getType()) * k;
}

namespace {
/// A gemm's FLOPs, `mn` outputs: 2 K per output; C's addition, and beta's
/// product unless beta is 1 (a Linear's bias: the add it replaced counted
/// 1 per output).
int64_t gemmFlops(Value a, bool transA, int64_t mn, Value c,
                  const APFloat &beta) {
  int64_t k = shaped(a).getDimSize(transA ? 0 : 1);
  int64_t add = !c ? 0 : beta.isExactlyValue(1.0) ? mn : 2 * mn;
  return 2 * mn * k + add;
}
} // namespace

int64_t GemmOp::getFlops() {
  return gemmFlops(getA(), getTransA(), numElements(getType()), getC(),
                   getBeta());
}

// The gemm's and the GELU's (gelu_tanh: 9, gelu_tanh_grad: 14 per element).
int64_t GemmGeluTanhOp::getFlops() {
  int64_t mn = numElements(getOutput().getType());
  return gemmFlops(getA(), getTransA(), mn, getC(), getBeta()) + 9 * mn;
}
int64_t GemmGeluTanhGradOp::getFlops() {
  int64_t mn = numElements(getType());
  return gemmFlops(getA(), getTransA(), mn, Value(), APFloat(1.0)) + 14 * mn;
}

// weft/ops/Glu.h's per-element counts (0 for an activation the verifier
// refuses).
static int64_t gluFlops(StringRef activation, Type type, bool grad) {
  std::optional<ops::GluActivation> a = ops::gluActivationNamed(activation);
  return a ? ops::gluFlopsPerElement(*a, grad) * numElements(type) : 0;
}
int64_t GluOp::getFlops() {
  return gluFlops(getActivation(), getType(), false);
}
int64_t GluGradOp::getFlops() {
  return gluFlops(getActivation(), getGate().getType(), true);
}

int64_t BatchNormOp::getFlops() {
  return (getTraining() ? 7 : 4) * numElements(getInput().getType());
}
int64_t DropoutOp::getFlops() {
  bool active = getTraining() && getRatio().convertToDouble() > 0.0;
  return active ? 2 * numElements(getInput().getType()) : 0;
}

// Data movement: no arithmetic.
int64_t ReshapeOp::getBytesRead() { return 0; }
int64_t ReshapeOp::getBytesWritten() { return 0; }
int64_t SliceOp::getBytesRead() { return byteSize(getType()); }
int64_t GatherOp::getBytesRead() {
  // The gathered rows (= the result) plus the indices; never the whole table.
  return byteSize(getType()) + byteSize(getIndices().getType());
}

int64_t ConvOp::getFlops() {
  auto weight = shaped(getWeight());
  // Each output element: (C/group) * prod(kernel) multiply-adds.
  int64_t macsPerOutput =
      weight.getDimSize(1) * product(weight.getShape().drop_front(2));
  int64_t outputs = numElements(getType());
  return 2 * outputs * macsPerOutput + (getBias() ? outputs : 0);
}

int64_t ConvTransposeOp::getFlops() {
  auto weight = shaped(getWeight());
  // Each input element scatters into (M/group) * prod(kernel) outputs.
  int64_t macsPerInput =
      weight.getDimSize(1) * product(weight.getShape().drop_front(2));
  int64_t bias = getBias() ? numElements(getType()) : 0;
  return 2 * numElements(getInput().getType()) * macsPerInput + bias;
}

int64_t MaxPoolOp::getFlops() {
  return numElements(getType()) * product(getKernelShape());
}
int64_t AvgPoolOp::getFlops() {
  return numElements(getType()) * product(getKernelShape());
}

int64_t NllLossOp::getFlops() { return 2 * numElements(getTarget().getType()); }
