//===- WeftOps.cpp - weft op verification and result-type inference -------===//
//
// Every rule here is the output-shape rule of the ONNX operator the op mirrors
// (ONNX opset 17 operator spec); the importer cross-checks it against ONNX
// shape inference.
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
RankedTensorType ranked(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Checks an axis attribute that the importer normalised to [0, rank).
LogicalResult checkAxis(std::optional<Location> loc, int64_t axis,
                        int64_t rank) {
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "axis ", axis, " out of range [0, ", rank,
                             ")");
  return success();
}

/// Shared shape rule of Conv/ConvTranspose/pooling attribute lists: one entry
/// per spatial dim (`pads`: two).
LogicalResult checkWindowAttrs(std::optional<Location> loc, int64_t spatial,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations) {
  if ((int64_t)strides.size() != spatial ||
      (int64_t)pads.size() != 2 * spatial ||
      (!dilations.empty() && (int64_t)dilations.size() != spatial))
    return emitOptionalError(loc, "expected ", spatial,
                             " strides/dilations and ", 2 * spatial,
                             " pads for ", spatial, " spatial dims");
  for (int64_t s : strides)
    if (s <= 0)
      return emitOptionalError(loc, "strides must be positive");
  for (int64_t d : dilations)
    if (d <= 0)
      return emitOptionalError(loc, "dilations must be positive");
  return success();
}

/// Pooling result: [N, C, windowOutputSize(...)...].
LogicalResult inferPool(std::optional<Location> loc, RankedTensorType input,
                        ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        bool ceilMode, Types &out) {
  int64_t spatial = input.getRank() - 2;
  if (spatial < 1 || (int64_t)kernel.size() != spatial)
    return emitOptionalError(loc, "pooling expects [N, C, D1..Dn] input and n ",
                             "kernel dims, got ", input, " and ", kernel.size(),
                             " kernel dims");
  if (failed(checkWindowAttrs(loc, spatial, strides, pads, dilations)))
    return failure();
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutputSize(
        input.getDimSize(i + 2), kernel[i], strides[i], pads[i],
        pads[i + spatial], dilations.empty() ? 1 : dilations[i], ceilMode));
  out.push_back(tensorOf(shape, input.getElementType()));
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor, Types &out) {
  auto cond = cast<RankedTensorType>(adaptor.getCondition().getType());
  auto x = cast<RankedTensorType>(adaptor.getX().getType());
  auto y = cast<RankedTensorType>(adaptor.getY().getType());
  if (x.getElementType() != y.getElementType())
    return emitOptionalError(loc, "x and y element types differ: ", x, ", ", y);
  auto xy = broadcastShapes(x.getShape(), y.getShape());
  auto all = xy ? broadcastShapes(cond.getShape(), *xy) : std::nullopt;
  if (!all)
    return emitOptionalError(loc, "shapes ", cond, ", ", x, ", ", y,
                             " do not broadcast");
  out.push_back(tensorOf(*all, x.getElementType()));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       Adaptor adaptor, Types &out) {
  out.push_back(
      tensorOf(cast<RankedTensorType>(adaptor.getInput().getType()).getShape(),
               adaptor.getTo()));
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location>,
                                           Adaptor adaptor, Types &out) {
  out.push_back(cast<TypedAttr>(adaptor.getValue()).getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &out) {
  auto lhs = cast<RankedTensorType>(adaptor.getLhs().getType());
  auto rhs = cast<RankedTensorType>(adaptor.getRhs().getType());
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitOptionalError(loc, "matmul operands must have rank >= 1");
  // numpy: a 1-D lhs is [1, K], a 1-D rhs is [K, 1]; the 1 is dropped after.
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  // transA/transB: the stored operand's last two dims read swapped.
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  if ((transA && lhsVector) || (transB && rhsVector))
    return emitOptionalError(loc,
                             "matmul transA/transB need an operand of "
                             "rank >= 2, got ",
                             lhs, " x ", rhs);
  if (transA)
    std::swap(a[a.size() - 2], a[a.size() - 1]);
  if (transB)
    std::swap(b[b.size() - 2], b[b.size() - 1]);
  int64_t k = a.back();
  if (k != b[b.size() - 2])
    return emitOptionalError(loc, "matmul contraction dims differ: ", lhs,
                             " x ", rhs);
  auto batch =
      broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2));
  if (!batch)
    return emitOptionalError(loc, "matmul batch dims do not broadcast: ", lhs,
                             " x ", rhs);
  SmallVector<int64_t> shape(*batch);
  if (!lhsVector)
    shape.push_back(a[a.size() - 2]);
  if (!rhsVector)
    shape.push_back(b.back());
  out.push_back(tensorOf(shape, lhs.getElementType()));
  return success();
}

namespace {
/// ONNX Gemm-13's result: [M, N] from A [M, K] ([K, M] transposed), B
/// [K, N] ([N, K]) and C broadcasting to [M, N] (null: none).
LogicalResult inferGemm(std::optional<Location> loc, Value lhs, Value rhs,
                        Value c, bool transA, bool transB, Types &out) {
  RankedTensorType a = ranked(lhs), b = ranked(rhs);
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "gemm operands must be 2-D, got ", a, ", ",
                             b);
  int64_t m = a.getDimSize(transA ? 1 : 0);
  int64_t ka = a.getDimSize(transA ? 0 : 1);
  int64_t kb = b.getDimSize(transB ? 1 : 0);
  int64_t n = b.getDimSize(transB ? 0 : 1);
  if (ka != kb)
    return emitOptionalError(loc, "gemm contraction dims differ: ", ka, " vs ",
                             kb);
  if (c) {
    auto shape = broadcastShapes(ranked(c).getShape(), {m, n});
    if (!shape || *shape != SmallVector<int64_t>{m, n})
      return emitOptionalError(loc, "gemm C ", c.getType(),
                               " does not broadcast to [", m, ", ", n, "]");
  }
  out.push_back(tensorOf({m, n}, a.getElementType()));
  return success();
}
} // namespace

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor, Types &out) {
  return inferGemm(loc, adaptor.getA(), adaptor.getB(), adaptor.getC(),
                   adaptor.getTransA(), adaptor.getTransB(), out);
}

/// The gemm's result, twice: the GELU's output and its input.
LogicalResult GemmGeluTanhOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor, Types &out) {
  if (failed(inferGemm(loc, adaptor.getA(), adaptor.getB(), adaptor.getC(),
                       adaptor.getTransA(), adaptor.getTransB(), out)))
    return failure();
  out.push_back(out.back());
  return success();
}

LogicalResult GemmGeluTanhGradOp::inferReturnTypes(MLIRContext *,
                                                   std::optional<Location> loc,
                                                   Adaptor adaptor,
                                                   Types &out) {
  if (failed(inferGemm(loc, adaptor.getA(), adaptor.getB(), Value(),
                       adaptor.getTransA(), adaptor.getTransB(), out)))
    return failure();
  if (adaptor.getPreActivation().getType() != out.back())
    return emitOptionalError(loc, "gemm_gelu_tanh_grad: pre_activation ",
                             adaptor.getPreActivation().getType(),
                             " is not the gemm's result type ", out.back());
  return success();
}

//===----------------------------------------------------------------------===//
// Normalisation, activation with an axis, dropout
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return checkAxis(getLoc(), getAxis(), getType().getRank());
}
LogicalResult LogSoftmaxOp::verify() {
  return checkAxis(getLoc(), getAxis(), getType().getRank());
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if (input.getRank() < 2)
    return emitOptionalError(loc, "batch_norm input must be [N, C, ...], got ",
                             input);
  int64_t channels = input.getDimSize(1);
  for (Value v : {adaptor.getScale(), adaptor.getBias(), adaptor.getMean(),
                  adaptor.getVar()})
    if (ranked(v).getShape() != ArrayRef<int64_t>{channels})
      return emitOptionalError(loc, "batch_norm per-channel operand ",
                               v.getType(), " must be [", channels, "]");
  out.push_back(input);
  out.push_back(adaptor.getMean().getType());
  out.push_back(adaptor.getVar().getType());
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  double ratio = adaptor.getRatio().convertToDouble();
  if (ratio < 0.0 || ratio >= 1.0)
    return emitOptionalError(loc, "dropout ratio must be in [0, 1), got ",
                             ratio);
  out.push_back(input);
  out.push_back(tensorOf(input.getShape(), IntegerType::get(ctx, 1)));
  return success();
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

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if ((int64_t)perm.size() != input.getRank())
    return emitOptionalError(loc, "perm has ", perm.size(),
                             " entries for rank ", input.getRank());
  SmallVector<int64_t> shape;
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return emitOptionalError(loc, "perm is not a permutation");
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
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

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto shape = broadcastShapes(input.getShape(), adaptor.getShape());
  if (!shape)
    return emitOptionalError(loc, "cannot expand ", input, " to shape [",
                             adaptor.getShape(), "]");
  out.push_back(tensorOf(*shape, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &out) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "concat needs at least one input");
  auto first = ranked(adaptor.getInputs().front());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, first.getRank())))
    return failure();
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : adaptor.getInputs()) {
    auto type = ranked(v);
    if (type.getRank() != first.getRank() ||
        type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "concat inputs differ in rank or type");
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (i != axis && type.getDimSize(i) != first.getDimSize(i))
        return emitOptionalError(loc, "concat inputs differ in dim ", i);
    shape[axis] += type.getDimSize(axis);
  }
  out.push_back(tensorOf(shape, first.getElementType()));
  return success();
}

LogicalResult SplitOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, input.getRank())))
    return failure();
  int64_t total = 0;
  for (int64_t size : adaptor.getSizes()) {
    if (size < 0)
      return emitOptionalError(loc, "split sizes must be non-negative");
    total += size;
  }
  if (total != input.getDimSize(axis))
    return emitOptionalError(loc, "split sizes sum to ", total, ", dim ", axis,
                             " is ", input.getDimSize(axis));
  for (int64_t size : adaptor.getSizes()) {
    SmallVector<int64_t> shape(input.getShape());
    shape[axis] = size;
    out.push_back(tensorOf(shape, input.getElementType()));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  int64_t rank = input.getRank();
  if ((int64_t)starts.size() != rank || (int64_t)ends.size() != rank ||
      (int64_t)steps.size() != rank)
    return emitOptionalError(loc, "slice needs one start/end/step per dim");
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t step = steps[i], dim = input.getDimSize(i);
    if (step == 0)
      return emitOptionalError(loc, "slice step must be non-zero");
    // Normalised bounds: [0, dim] for positive steps, [-1, dim-1] for negative.
    bool ok = step > 0 ? (starts[i] >= 0 && starts[i] <= dim && ends[i] >= 0 &&
                          ends[i] <= dim)
                       : (starts[i] >= -1 && starts[i] < dim && ends[i] >= -1 &&
                          ends[i] < dim);
    if (!ok)
      return emitOptionalError(loc, "slice bounds of dim ", i,
                               " are not normalised");
    // ceil(span / |step|) without overflow, for any step (even INT64_MIN).
    int64_t span = step > 0 ? ends[i] - starts[i] : starts[i] - ends[i];
    uint64_t stride = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
    shape.push_back(span <= 0 ? 0 : int64_t((uint64_t(span) - 1) / stride + 1));
  }
  out.push_back(tensorOf(shape, input.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &out) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxis(loc, axis, data.getRank())))
    return failure();
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  out.push_back(tensorOf(shape, data.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> pads = adaptor.getPads();
  int64_t rank = input.getRank();
  if ((int64_t)pads.size() != 2 * rank)
    return emitOptionalError(loc, "pad needs ", 2 * rank, " pads, got ",
                             pads.size());
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = input.getDimSize(i) + pads[i] + pads[i + rank];
    if (d < 0)
      return emitOptionalError(loc, "pads crop dim ", i, " below zero");
    shape.push_back(d);
  }
  out.push_back(tensorOf(shape, input.getElementType()));
  return success();
}

LogicalResult ResizeOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  if ((int64_t)adaptor.getSizes().size() != input.getRank() ||
      (int64_t)adaptor.getScales().size() != input.getRank())
    return emitOptionalError(loc, "resize needs one size and scale per dim");
  StringRef mode = adaptor.getCoordinateTransformationMode();
  if (!llvm::is_contained({"half_pixel", "pytorch_half_pixel", "align_corners",
                           "asymmetric", "tf_half_pixel_for_nn"},
                          mode))
    return emitOptionalError(loc, "unknown coordinate_transformation_mode '",
                             mode, "'");
  StringRef nearest = adaptor.getNearestMode();
  if (!llvm::is_contained(
          {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"},
          nearest))
    return emitOptionalError(loc, "unknown nearest_mode '", nearest, "'");
  out.push_back(tensorOf(adaptor.getSizes(), input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> loc,
                                       Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  int64_t spatial = input.getRank() - 2, group = adaptor.getGroup();
  if (spatial < 1 || weight.getRank() != input.getRank())
    return emitOptionalError(loc,
                             "conv expects X [N, C, D...] and W [M, C/g, "
                             "k...] of equal rank, got ",
                             input, " and ", weight);
  int64_t outChannels = weight.getDimSize(0);
  if (group <= 0 || input.getDimSize(1) != weight.getDimSize(1) * group ||
      outChannels % group != 0)
    return emitOptionalError(loc, "conv channels do not match: X ", input,
                             ", W ", weight, ", group ", group);
  if (Value bias = adaptor.getBias())
    if (ranked(bias).getShape() != ArrayRef<int64_t>{outChannels})
      return emitOptionalError(loc, "conv bias must be [", outChannels, "]");
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  if (failed(checkWindowAttrs(loc, spatial, adaptor.getStrides(),
                              adaptor.getPads(), dilations)))
    return failure();
  SmallVector<int64_t> shape{input.getDimSize(0), outChannels};
  for (int64_t i = 0; i < spatial; ++i)
    shape.push_back(windowOutputSize(
        input.getDimSize(i + 2), weight.getDimSize(i + 2),
        adaptor.getStrides()[i], adaptor.getPads()[i],
        adaptor.getPads()[i + spatial], dilations.empty() ? 1 : dilations[i],
        /*ceilMode=*/false));
  out.push_back(tensorOf(shape, input.getElementType()));
  return success();
}

LogicalResult ConvTransposeOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor, Types &out) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  auto weight = cast<RankedTensorType>(adaptor.getWeight().getType());
  int64_t spatial = input.getRank() - 2, group = adaptor.getGroup();
  if (spatial < 1 || weight.getRank() != input.getRank() || group <= 0 ||
      input.getDimSize(1) != weight.getDimSize(0))
    return emitOptionalError(loc,
                             "conv_transpose expects X [N, C, D...] and "
                             "W [C, M/g, k...], got ",
                             input, " and ", weight);
  int64_t outChannels = weight.getDimSize(1) * group;
  if (Value bias = adaptor.getBias())
    if (ranked(bias).getShape() != ArrayRef<int64_t>{outChannels})
      return emitOptionalError(loc, "conv_transpose bias must be [",
                               outChannels, "]");
  ArrayRef<int64_t> strides = adaptor.getStrides(), pads = adaptor.getPads(),
                    dilations = adaptor.getDilations(),
                    outputPadding = adaptor.getOutputPadding();
  if (failed(checkWindowAttrs(loc, spatial, strides, pads, dilations)) ||
      (int64_t)outputPadding.size() != spatial)
    return emitOptionalError(loc, "conv_transpose needs ", spatial,
                             " output_padding entries");
  SmallVector<int64_t> shape{input.getDimSize(0), outChannels};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t dilation = dilations.empty() ? 1 : dilations[i];
    shape.push_back(strides[i] * (input.getDimSize(i + 2) - 1) +
                    outputPadding[i] +
                    ((weight.getDimSize(i + 2) - 1) * dilation + 1) - pads[i] -
                    pads[i + spatial]);
    if (shape.back() <= 0)
      return emitOptionalError(loc, "conv_transpose output dim ", i,
                               " is not positive");
  }
  out.push_back(tensorOf(shape, input.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor, Types &out) {
  return inferPool(loc, cast<RankedTensorType>(adaptor.getInput().getType()),
                   adaptor.getKernelShape(), adaptor.getStrides(),
                   adaptor.getPads(), adaptor.getDilations(),
                   adaptor.getCeilMode(), out);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor, Types &out) {
  return inferPool(loc, cast<RankedTensorType>(adaptor.getInput().getType()),
                   adaptor.getKernelShape(), adaptor.getStrides(),
                   adaptor.getPads(), /*dilations=*/{}, adaptor.getCeilMode(),
                   out);
}

#define GET_OP_CLASSES
#include "weft/Dialect/Weft/IR/WeftOps.cpp.inc"
