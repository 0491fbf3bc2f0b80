//===- MovementOps.cpp - ONNX data-movement operators -> weft -------------===//
//
// Value-dependent operands (shape, axes, starts/ends, pads, scales) must be
// compile-time constants and become attributes. On constant data the ops are
// folded, which is how torch's Shape -> Gather -> Concat -> Reshape chains
// disappear at import.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include <cmath>

using namespace mlir;
using namespace weft;

namespace {

/// Binds `node`'s output to its input reinterpreted as `shape`.
LogicalResult bindReshape(GraphImporter &g, const Node &node,
                          ArrayRef<int64_t> shape) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(node, g.build<ReshapeOp>(node, x, shape));
}

/// The product of non-negative `dims`, saturating at INT64_MAX: shape
/// operands are model data, and a hostile Reshape or Expand target must
/// compare unequal to every real size rather than wrap.
int64_t product(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(p, d, &p))
      return INT64_MAX;
  return p;
}

LogicalResult convertReshape(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  const HostTensor *shapeArg = g.requireConstant(node, 1, "shape");
  if (!type || !shapeArg)
    return failure();
  bool allowZero = g.attrInt(node, "allowzero");
  SmallVector<int64_t> shape(shapeArg->toInts());
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if ((int64_t)i >= type.getRank())
        return g.error(node) << "shape[" << i << "] = 0 copies a dim the "
                             << "input (rank " << type.getRank() << ") lacks";
      shape[i] = type.getDimSize(i);
    }
    if (shape[i] == -1) {
      if (inferred >= 0)
        return g.error(node) << "shape has more than one -1";
      inferred = i;
    } else if (shape[i] < 0) {
      return g.error(node) << "shape has invalid dim " << shape[i];
    } else {
      known = product({known, shape[i]});
    }
  }
  if (inferred >= 0) {
    if (known == 0 || type.getNumElements() % known != 0) {
      InFlightDiagnostic diag = g.error(node);
      diag << "cannot infer the -1 dim: " << type << " has "
           << type.getNumElements() << " elements";
      return g.explainFixedBatch(diag, node, shapeArg->toInts());
    }
    shape[inferred] = type.getNumElements() / known;
  }
  if (product(shape) != type.getNumElements()) {
    InFlightDiagnostic diag = g.error(node);
    diag << "cannot reshape " << type << " to " << product(shape)
         << " elements";
    return g.explainFixedBatch(diag, node, shapeArg->toInts());
  }
  return bindReshape(g, node, shape);
}

LogicalResult convertFlatten(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  int64_t axis = g.attrInt(node, "axis");
  if (axis < 0)
    axis += type.getRank();
  if (axis < 0 || axis > type.getRank())
    return g.error(node) << "axis out of range for " << type;
  return bindReshape(g, node,
                     {product(type.getShape().take_front(axis)),
                      product(type.getShape().drop_front(axis))});
}

LogicalResult convertSqueeze(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  auto axes = g.axes(node, type.getRank());
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    bool squeeze =
        axes->empty() ? type.getDimSize(i) == 1 : llvm::is_contained(*axes, i);
    if (squeeze && type.getDimSize(i) != 1)
      return g.error(node) << "cannot squeeze dim " << i << " of " << type;
    if (!squeeze)
      shape.push_back(type.getDimSize(i));
  }
  return bindReshape(g, node, shape);
}

LogicalResult convertUnsqueeze(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  // Axes index the output, whose rank is the input's plus the new dims.
  int64_t count = g.has(node, 1) ? g.type(node, 1).getNumElements()
                                 : (int64_t)g.attrInts(node, "axes").size();
  auto axes = g.axes(node, type.getRank() + count);
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape;
  auto in = type.getShape().begin();
  for (int64_t i = 0; i < type.getRank() + count; ++i)
    shape.push_back(llvm::is_contained(*axes, i) ? 1 : *in++);
  return bindReshape(g, node, shape);
}

LogicalResult convertTranspose(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  SmallVector<int64_t> perm = g.attrInts(node, "perm");
  if (!g.attr(node, "perm"))
    for (int64_t i = type.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(node, g.build<TransposeOp>(node, x, perm));
}

LogicalResult convertExpand(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  const HostTensor *shapeArg = g.requireConstant(node, 1, "shape");
  if (!type || !shapeArg)
    return failure();
  SmallVector<int64_t> target(shapeArg->toInts());
  auto shape = broadcastShapes(type.getShape(), target);
  if (!shape)
    return g.error(node) << "cannot expand " << type << " to [" << target
                         << "]";
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(node, g.build<ExpandOp>(node, x, *shape));
}

/// Tile-13 as the copies a broadcast makes: x reshaped to [1, d0, 1, d1,
/// ...], expanded to [r0, d0, r1, d1, ...] and merged to [r0 d0, r1 d1,
/// ...] (element k of a dim reads k mod d), so its gradient is expand's,
/// a sum over the copies.
LogicalResult convertTile(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  const HostTensor *repeatsArg = g.requireConstant(node, 1, "repeats");
  if (!x || !repeatsArg)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> repeats = repeatsArg->toInts();
  if ((int64_t)repeats.size() != type.getRank())
    return g.error(node) << "repeats has " << repeats.size()
                         << " entries for rank " << type.getRank();
  SmallVector<int64_t> spread, copies, merged;
  for (auto [d, r] : llvm::zip(type.getShape(), repeats)) {
    if (r < 0)
      return g.error(node) << "repeats holds " << r << "; it must be >= 0";
    spread.append({1, d});
    copies.append({r, d});
    merged.push_back(product({r, d}));
  }
  Operation *spreadOp = g.build<ReshapeOp>(node, x, spread);
  Operation *copyOp =
      spreadOp ? g.build<ExpandOp>(node, spreadOp->getResult(0), copies)
               : nullptr;
  if (!copyOp)
    return failure();
  return g.bindResults(node,
                       g.build<ReshapeOp>(node, copyOp->getResult(0), merged));
}

LogicalResult convertConcat(GraphImporter &g, const Node &node) {
  RankedTensorType first = g.type(node, 0);
  if (!first)
    return failure();
  FailureOr<int64_t> axis =
      g.normalizeAxis(node, g.attrInt(node, "axis", 0), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<Value> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    Value v = g.operand(node, i);
    if (!v)
      return failure();
    inputs.push_back(v);
  }
  return g.bindResults(node, g.build<ConcatOp>(node, inputs, *axis));
}

LogicalResult convertSplit(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  FailureOr<int64_t> axis =
      g.normalizeAxis(node, g.attrInt(node, "axis"), type.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> sizes;
  if (g.has(node, 1)) {
    const HostTensor *t = g.requireConstant(node, 1, "split");
    if (!t)
      return failure();
    sizes.assign(t->toInts());
  } else if (g.attr(node, "split")) {
    sizes = g.attrInts(node, "split");
  } else if (const auto *n = g.attr(node, "num_outputs")) {
    // Split-18: num_outputs parts of ceil(dim / n), the last one smaller.
    int64_t parts = n->i(), dim = type.getDimSize(*axis);
    if (parts <= 0 || parts != node.output_size())
      return g.error(node) << "num_outputs is " << parts << " for "
                           << node.output_size() << " outputs";
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t k = 0; k < parts; ++k)
      sizes.push_back(std::clamp<int64_t>(dim - k * chunk, 0, chunk));
  } else {
    int64_t parts = node.output_size(), dim = type.getDimSize(*axis);
    if (dim % parts != 0)
      return g.error(node) << "dim " << *axis << " (" << dim
                           << ") does not split evenly into " << parts;
    sizes.assign(parts, dim / parts);
  }
  if ((int64_t)sizes.size() != node.output_size())
    return g.error(node) << sizes.size() << " split sizes for "
                         << node.output_size() << " outputs";
  return g.bindResults(node, g.build<SplitOp>(node, x, *axis, sizes));
}

LogicalResult convertSlice(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  const HostTensor *startsArg = g.requireConstant(node, 1, "starts");
  const HostTensor *endsArg = g.requireConstant(node, 2, "ends");
  if (!startsArg || !endsArg)
    return failure();
  SmallVector<int64_t> startsIn = startsArg->toInts(),
                       endsIn = endsArg->toInts();
  SmallVector<int64_t> axes(startsIn.size()), stepsIn(startsIn.size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (g.has(node, 3)) {
    const HostTensor *t = g.requireConstant(node, 3, "axes");
    if (!t)
      return failure();
    axes = t->toInts();
  }
  if (g.has(node, 4)) {
    const HostTensor *t = g.requireConstant(node, 4, "steps");
    if (!t)
      return failure();
    stepsIn = t->toInts();
  }
  if (endsIn.size() != startsIn.size() || axes.size() != startsIn.size() ||
      stepsIn.size() != startsIn.size())
    return g.error(node) << "starts, ends, axes and steps differ in length";
  int64_t rank = type.getRank();
  SmallVector<int64_t> starts(rank, 0), ends(type.getShape()), steps(rank, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> a = g.normalizeAxis(node, axes[i], rank);
    if (failed(a))
      return failure();
    int64_t dim = type.getDimSize(*a), step = stepsIn[i];
    if (step == 0)
      return g.error(node) << "steps must be non-zero";
    // ONNX Slice-13: negative indices count from the end, then clamp to
    // [0, dim] (step > 0) or [-1, dim - 1] (step < 0).
    auto clampTo = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v + dim < v ? lo : v + dim; // guard INT64_MIN-style sentinels
      return std::clamp(v, lo, hi);
    };
    // A step longer than the dim takes one element, as a step of the dim
    // does: the IR carries no step whose products could overflow.
    int64_t longest = std::max<int64_t>(dim, 1);
    step = step > 0 ? std::min(step, longest) : std::max(step, -longest);
    steps[*a] = step;
    if (step > 0) {
      starts[*a] = clampTo(startsIn[i], 0, dim);
      ends[*a] = clampTo(endsIn[i], 0, dim);
    } else {
      starts[*a] = clampTo(startsIn[i], -1, dim - 1);
      ends[*a] = clampTo(endsIn[i], -1, dim - 1);
    }
  }
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  return g.bindResults(node, g.build<SliceOp>(node, x, starts, ends, steps));
}

LogicalResult convertGather(GraphImporter &g, const Node &node) {
  RankedTensorType type = g.type(node, 0);
  if (!type)
    return failure();
  FailureOr<int64_t> axis =
      g.normalizeAxis(node, g.attrInt(node, "axis"), type.getRank());
  if (failed(axis))
    return failure();
  Value data = g.operand(node, 0), indices = g.operand(node, 1);
  if (!data || !indices)
    return failure();
  Operation *gather = g.build<GatherOp>(node, data, indices, *axis);
  if (gather && *axis == 0)
    if (std::optional<int64_t> row = g.paddingRow(node, 0))
      gather->setAttr(kPaddingIdxAttr, g.builder().getI64IntegerAttr(*row));
  return g.bindResults(node, gather);
}

/// GatherElements-13.
LogicalResult convertGatherElements(GraphImporter &g, const Node &node) {
  Value data = g.operand(node, 0), indices = g.operand(node, 1);
  if (!data || !indices)
    return failure();
  FailureOr<int64_t> axis =
      g.normalizeAxis(node, g.attrInt(node, "axis"),
                      cast<RankedTensorType>(data.getType()).getRank());
  if (failed(axis))
    return failure();
  return g.bindResults(node,
                       g.build<GatherElementsOp>(node, data, indices, *axis));
}

/// GatherND-13 as one Gather: data's batch dims and its k indexed dims
/// merged into one, `[prod(batch) prod(indexed), rest..]`, read at the
/// row-major linear index of each index tuple (batch offset + the sum of
/// each component, negatives wrapped, times its dim's stride). Its
/// gradient and kernels are then Gather's (a scatter-add of rows). Constant
/// indices become constant linear indices, each component range-checked
/// here; runtime ones compute them with integer ops, where only the linear
/// index is range-checked (by the gather kernel), as the components'
/// checks would need an assert weft does not have.
LogicalResult convertGatherND(GraphImporter &g, const Node &node) {
  Value data = g.operand(node, 0);
  RankedTensorType indexType = g.type(node, 1);
  if (!data || !indexType)
    return failure();
  ArrayRef<int64_t> ds = cast<RankedTensorType>(data.getType()).getShape(),
                    is = indexType.getShape();
  int64_t r = ds.size(), q = is.size(), b = g.attrInt(node, "batch_dims");
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return g.error(node) << "batch_dims " << b << " must be below the ranks "
                         << "of data (" << r << ") and indices (" << q << ")";
  int64_t k = is.back();
  if (k < 1 || k > r - b)
    return g.error(node) << "indices' last dim " << k << " must be between "
                         << "1 and data's rank minus batch_dims, " << r - b;
  for (int64_t i = 0; i < b; ++i)
    if (ds[i] != is[i])
      return g.error(node) << "batch dim " << i << " is " << ds[i]
                           << " in data and " << is[i] << " in indices";
  int64_t block = product(ds.slice(b, k));
  SmallVector<int64_t> strides(k, 1);
  for (int64_t j = k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * ds[b + j + 1];
  SmallVector<int64_t> flatShape = {product(ds.take_front(b)) * block};
  llvm::append_range(flatShape, ds.drop_front(b + k));
  ArrayRef<int64_t> tupleShape = is.drop_back();
  // Tuples per batch entry: the linear batch index of tuple n is n / inner.
  int64_t inner = product(tupleShape.drop_front(b));

  Value linear;
  if (const HostTensor *c = g.constant(node, 1)) {
    HostTensor lin = HostTensor::zeros(onnx::TensorProto::INT64, tupleShape);
    for (int64_t n = 0; n < lin.size(); ++n) {
      int64_t sum = n / inner * block;
      for (int64_t j = 0; j < k; ++j) {
        int64_t idx = c->getInt(n * k + j), d = ds[b + j];
        if (idx < -d || idx >= d)
          return g.error(node)
                 << "index " << idx << " (tuple " << n << ", component " << j
                 << ") is out of range for dim " << b + j << " of size " << d;
        sum += (idx < 0 ? idx + d : idx) * strides[j];
      }
      lin.set(n, static_cast<double>(sum));
    }
    linear = g.constantOf(node, lin);
  } else {
    Value indices = g.operand(node, 1);
    Type i64 = g.builder().getI64Type();
    if (indexType.getElementType() != i64)
      indices = g.make<CastOp>(node, indices, i64);
    auto scalar = [&](int64_t v) { return g.scalarOf(node, i64, double(v)); };
    SmallVector<int64_t> starts(q, 0), ends(is), steps(q, 1);
    for (int64_t j = 0; j < k; ++j) {
      starts.back() = j;
      ends.back() = j + 1;
      Value part =
          g.make<SliceOp>(node, indices, ArrayRef<int64_t>(starts),
                          ArrayRef<int64_t>(ends), ArrayRef<int64_t>(steps));
      part = g.make<ReshapeOp>(node, part, tupleShape);
      Value negative =
          g.make<CompareOp>(node, part, scalar(0), StringRef("less"));
      part = g.make<WhereOp>(
          node, negative, g.make<AddOp>(node, part, scalar(ds[b + j])), part);
      if (strides[j] != 1)
        part = g.make<MulOp>(node, part, scalar(strides[j]));
      linear = j == 0 ? part : g.make<AddOp>(node, linear, part);
    }
    if (b > 0) {
      SmallVector<int64_t> offsetShape(is.take_front(b));
      offsetShape.resize(q - 1, 1);
      HostTensor offsets =
          HostTensor::zeros(onnx::TensorProto::INT64, offsetShape);
      for (int64_t n = 0; n < offsets.size(); ++n)
        offsets.set(n, static_cast<double>(n * block));
      linear = g.make<AddOp>(node, linear, g.constantOf(node, offsets));
    }
  }
  Value flat = g.make<ReshapeOp>(node, data, ArrayRef<int64_t>(flatShape));
  Value out = g.make<GatherOp>(node, flat, linear, 0);
  if (!out)
    return failure();
  g.bind(node, 0, out);
  return success();
}

LogicalResult convertPad(GraphImporter &g, const Node &node) {
  std::string mode = g.attrString(node, "mode");
  if (mode != "constant")
    return g.error(node) << "unsupported variant: mode '" << mode
                         << "' (weft implements constant padding)";
  Value x = g.operand(node, 0);
  const HostTensor *pads = g.requireConstant(node, 1, "pads");
  if (!x || !pads)
    return failure();
  double value = 0.0;
  if (g.has(node, 2)) {
    const HostTensor *v = g.requireConstant(node, 2, "constant_value");
    if (!v)
      return failure();
    value = v->size() ? v->getDouble(0) : 0.0;
  }
  SmallVector<int64_t> padding(pads->toInts());
  // Pad-18: optional axes (input 3) that the pads are for; [begins, ends]
  // over those axes, zero elsewhere.
  if (g.has(node, 3)) {
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    FailureOr<SmallVector<int64_t>> axes = g.axesInput(node, 3, rank);
    if (failed(axes))
      return failure();
    int64_t n = axes->size();
    if ((int64_t)padding.size() != 2 * n)
      return g.error(node) << "pads has " << padding.size() << " entries for "
                           << n << " axes";
    SmallVector<int64_t> full(2 * rank, 0);
    for (int64_t k = 0; k < n; ++k) {
      full[(*axes)[k]] = padding[k];
      full[(*axes)[k] + rank] = padding[k + n];
    }
    padding = std::move(full);
  }
  return g.bindResults(
      node, g.build<PadOp>(node, x, g.builder().getDenseI64ArrayAttr(padding),
                           g.builder().getF64FloatAttr(value)));
}

LogicalResult convertTrilu(GraphImporter &g, const Node &node) {
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  int64_t k = 0;
  if (g.has(node, 1)) {
    const HostTensor *t = g.requireConstant(node, 1, "k");
    if (!t)
      return failure();
    k = t->getInt(0);
  }
  bool upper = g.attrInt(node, "upper");
  g.bind(node, 0,
         TriluOp::create(g.builder(), g.loc(node), x.getType(), x, upper, k));
  return success();
}

LogicalResult convertResize(GraphImporter &g, const Node &node) {
  std::string mode = g.attrString(node, "mode");
  std::string transform = g.attrString(node, "coordinate_transformation_mode");
  if (mode != "nearest")
    return g.error(node) << "unsupported variant: mode '" << mode
                         << "' (weft implements nearest)";
  if (transform == "tf_crop_and_resize")
    return g.error(node) << "unsupported variant: tf_crop_and_resize";
  // Resize-18: scales or sizes for a subset of the axes, and a policy that
  // keeps the aspect ratio; both left out (antialias only changes linear
  // and cubic modes).
  if (g.attr(node, "axes"))
    return g.error(node) << "unsupported variant: axes (give every dim)";
  if (g.attrString(node, "keep_aspect_ratio_policy") != "stretch")
    return g.error(node) << "unsupported variant: keep_aspect_ratio_policy '"
                         << g.attrString(node, "keep_aspect_ratio_policy")
                         << "'";
  Value x = g.operand(node, 0);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> sizes;
  SmallVector<double> scales;
  // Resize-13: exactly one of scales (input 2) and sizes (input 3); an empty
  // tensor counts as absent.
  const HostTensor *scalesArg =
      g.has(node, 2) ? g.requireConstant(node, 2, "scales") : nullptr;
  const HostTensor *sizesArg =
      g.has(node, 3) ? g.requireConstant(node, 3, "sizes") : nullptr;
  if ((g.has(node, 2) && !scalesArg) || (g.has(node, 3) && !sizesArg))
    return failure();
  if (sizesArg && sizesArg->size() > 0) {
    if (sizesArg->size() != rank)
      return g.error(node) << "sizes has " << sizesArg->size()
                           << " entries for rank " << rank;
    sizes.assign(sizesArg->toInts());
    for (int64_t d = 0; d < rank; ++d)
      scales.push_back(double(sizes[d]) / type.getDimSize(d));
  } else if (scalesArg && scalesArg->size() == rank) {
    for (int64_t d = 0; d < rank; ++d) {
      scales.push_back(scalesArg->getDouble(d));
      // ONNX: scales > 0; the product must fit a dim (found by the import
      // fuzz target: a converted -1e34 is undefined behaviour).
      double size = std::floor(type.getDimSize(d) * scales.back());
      if (!(scales.back() > 0) || !(size < 0x1p62))
        return g.error(node) << "scales[" << d << "] = " << scales.back()
                             << ": must be > 0 and give a size below 2^62";
      sizes.push_back(int64_t(size));
    }
  } else {
    return g.error(node) << "needs scales or sizes with one entry per dim";
  }
  return g.bindResults(node,
                       g.build<ResizeOp>(node, x, sizes, scales, transform,
                                         g.attrString(node, "nearest_mode")));
}

} // namespace

void weft::registerMovementConverters(ConverterMap &map) {
  map["Reshape"] = convertReshape;
  map["Flatten"] = convertFlatten;
  map["Squeeze"] = convertSqueeze;
  map["Unsqueeze"] = convertUnsqueeze;
  map["Transpose"] = convertTranspose;
  map["Expand"] = convertExpand;
  map["Tile"] = convertTile;
  map["GatherElements"] = convertGatherElements;
  map["GatherND"] = convertGatherND;
  map["Concat"] = convertConcat;
  map["Split"] = convertSplit;
  map["Slice"] = convertSlice;
  map["Gather"] = convertGather;
  map["Pad"] = convertPad;
  map["Trilu"] = convertTrilu;
  map["Resize"] = convertResize;
}
