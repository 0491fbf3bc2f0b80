//===- TensorSpecs.cpp - matmul, gemm, data movement, reductions ----------===//
//
// The output-shape rules of ONNX MatMul-13, Gemm-13, Transpose-13,
// Expand-13, Concat-13, Split-13, Slice-13 (bounds normalised by the
// importer), Gather-13, Pad-13 (constant mode), Trilu-14, Resize-13
// (nearest) and Reduce*-13 (resolved axes), as lib/Dialect/Weft/IR/
// WeftOps.cpp infers them.
//
//===----------------------------------------------------------------------===//

#include "Specs.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

namespace weft::rt::specs {

namespace {

Types matmul(const SpecCall &call) {
  call.requireSameDType(0, 1);
  const TensorType &lhs = call.in[0], &rhs = call.in[1];
  if (lhs.rank() == 0 || rhs.rank() == 0)
    call.fail("operands must have rank >= 1, got " + typeString(lhs) + " and " +
              typeString(rhs));
  // numpy: a 1-D lhs is [1, K], a 1-D rhs is [K, 1]; the 1 is dropped after.
  std::vector<int64_t> a = lhs.shape, b = rhs.shape;
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  // transA/transB: the operand's last two dims read swapped.
  for (auto [name, operand, dims] :
       {std::tuple{"transA", &lhs, &a}, std::tuple{"transB", &rhs, &b}}) {
    if (!call.attrs.flag(name))
      continue;
    if (operand->rank() < 2)
      call.fail(std::string(name) + " needs an operand of rank >= 2, got " +
                typeString(*operand));
    std::swap((*dims)[dims->size() - 2], (*dims)[dims->size() - 1]);
  }
  if (a.back() != b[b.size() - 2])
    call.fail("contraction dims differ: " + shapeString(lhs.shape) + " x " +
              shapeString(rhs.shape));
  std::vector<int64_t> shape =
      call.broadcast({a.begin(), a.end() - 2}, {b.begin(), b.end() - 2});
  if (lhs.rank() > 1)
    shape.push_back(a[a.size() - 2]);
  if (rhs.rank() > 1)
    shape.push_back(b.back());
  return {{lhs.dtype, shape}};
}

int64_t matmulFlops(const SpecCall &call, const Types &out) {
  const std::vector<int64_t> &a = call.in[0].shape;
  int64_t k = call.attrs.flag("transA") ? a[a.size() - 2] : a.back();
  return satMul(2, satMul(out[0].numel(), k));
}

Types gemm(const SpecCall &call) {
  call.requireSameDType(0, 1);
  const TensorType &a = call.in[0], &b = call.in[1];
  if (a.rank() != 2 || b.rank() != 2)
    call.fail("operands must be 2-D, got " + typeString(a) + " and " +
              typeString(b));
  bool ta = call.attrs.b("transA"), tb = call.attrs.b("transB");
  int64_t m = a.shape[ta ? 1 : 0], ka = a.shape[ta ? 0 : 1];
  int64_t kb = b.shape[tb ? 1 : 0], n = b.shape[tb ? 0 : 1];
  if (ka != kb)
    call.fail("contraction dims differ: " + std::to_string(ka) + " vs " +
              std::to_string(kb));
  if (call.in.size() > 2) {
    call.requireSameDType(0, 2);
    if (call.broadcast(call.in[2].shape, {m, n}) != std::vector<int64_t>{m, n})
      call.fail("C " + typeString(call.in[2]) + " does not broadcast to [" +
                std::to_string(m) + "x" + std::to_string(n) + "]");
  }
  return {{a.dtype, {m, n}}};
}

int64_t gemmFlops(const SpecCall &call, const Types &out) {
  int64_t k = call.in[0].shape[call.attrs.b("transA") ? 0 : 1];
  int64_t mn = out[0].numel();
  // C: its addition, and beta's product unless beta is 1 (as the
  // compiler's GemmOp::getFlops).
  int64_t c = call.in.size() < 3            ? 0
              : call.attrs.f("beta") == 1.0 ? mn
                                            : satMul(2, mn);
  return satAdd(satMul(2, satMul(mn, k)), c);
}

/// gemm_gelu_tanh (A, B, C?) -> (gelu_tanh(gemm), gemm): the gemm's rule.
Types gemmGeluTanh(const SpecCall &call) {
  Types out = gemm(call);
  out.push_back(out[0]);
  return out;
}

/// The gemm, and gelu_tanh's 9 FLOPs per element.
int64_t gemmGeluTanhFlops(const SpecCall &call, const Types &out) {
  return satAdd(gemmFlops(call, out), satMul(9, out[0].numel()));
}

/// gemm_gelu_tanh_grad (A, B, pre-activation) -> gelu_tanh_grad(pre,
/// gemm(A, B)): the gemm's rule without C; the pre-activation its type.
Types gemmGeluTanhGrad(const SpecCall &call) {
  std::vector<TensorType> operands(call.in.begin(), call.in.begin() + 2);
  Types out = gemm(SpecCall{operands, call.attrs});
  call.requireType(2, out[0], "the pre-activation");
  return out;
}

/// The gemm (2 K per output, no C), and gelu_tanh_grad's 14 per output.
int64_t gemmGeluTanhGradFlops(const SpecCall &call, const Types &out) {
  int64_t k = call.in[0].shape[call.attrs.b("transA") ? 0 : 1];
  return satMul(out[0].numel(), satAdd(satMul(2, k), 14));
}

Types transpose(const SpecCall &call) {
  const TensorType &x = call.in[0];
  const std::vector<int64_t> &perm = call.attrs.ints("perm");
  if (static_cast<int64_t>(perm.size()) != x.rank())
    call.fail("attribute 'perm' has " + std::to_string(perm.size()) +
              " entries for rank " + std::to_string(x.rank()));
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || seen[p])
      call.fail("attribute 'perm' is not a permutation of [0, " +
                std::to_string(x.rank()) + ")");
    seen[p] = true;
    shape.push_back(x.shape[p]);
  }
  return {{x.dtype, shape}};
}

Types expand(const SpecCall &call) {
  return {{call.in[0].dtype,
           call.broadcast(call.in[0].shape, call.attrs.ints("shape"))}};
}

Types concat(const SpecCall &call) {
  const TensorType &first = call.in[0];
  int64_t axis = call.axis("axis", first.rank());
  std::vector<int64_t> shape = first.shape;
  shape[axis] = 0;
  for (size_t k = 0; k < call.in.size(); ++k) {
    const TensorType &x = call.in[k];
    bool same = x.rank() == first.rank() && x.dtype == first.dtype;
    for (int64_t d = 0; same && d < x.rank(); ++d)
      same = d == axis || x.shape[d] == first.shape[d];
    if (!same)
      call.fail("input " + std::to_string(k) + " " + typeString(x) +
                " does not concatenate with " + typeString(first) +
                " along axis " + std::to_string(axis));
    shape[axis] = call.add(shape[axis], x.shape[axis]);
  }
  return {{first.dtype, shape}};
}

Types split(const SpecCall &call) {
  const TensorType &x = call.in[0];
  int64_t axis = call.axis("axis", x.rank()), total = 0;
  Types out;
  for (int64_t size : call.attrs.ints("sizes")) {
    if (size < 0)
      call.fail("attribute 'sizes' holds " + std::to_string(size));
    total = call.add(total, size);
    TensorType part = x;
    part.shape[axis] = size;
    out.push_back(part);
  }
  if (total != x.shape[axis])
    call.fail("attribute 'sizes' sums to " + std::to_string(total) + ", dim " +
              std::to_string(axis) + " is " + std::to_string(x.shape[axis]));
  return out;
}

Types slice(const SpecCall &call) {
  const TensorType &x = call.in[0];
  const std::vector<int64_t> &starts = call.attrs.ints("starts"),
                             &ends = call.attrs.ints("ends"),
                             &steps = call.attrs.ints("steps");
  int64_t rank = x.rank();
  if (int64_t(starts.size()) != rank || int64_t(ends.size()) != rank ||
      int64_t(steps.size()) != rank)
    call.fail("needs one start, end and step per dim (" + std::to_string(rank) +
              ")");
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t step = steps[i], dim = x.shape[i], s = starts[i], e = ends[i];
    if (step == 0)
      call.fail("step of dim " + std::to_string(i) + " is 0");
    // Normalised bounds: [0, dim] for positive steps, [-1, dim-1] otherwise.
    bool ok = step > 0 ? s >= 0 && s <= dim && e >= 0 && e <= dim
                       : s >= -1 && s < dim && e >= -1 && e < dim;
    if (!ok)
      call.fail("bounds " + std::to_string(s) + ".." + std::to_string(e) +
                " of dim " + std::to_string(i) + " (size " +
                std::to_string(dim) + ") are not normalised");
    // ceil(span / |step|) without overflow, for any step (even INT64_MIN).
    int64_t span = step > 0 ? e - s : s - e;
    uint64_t stride = step > 0 ? uint64_t(step) : 0 - uint64_t(step);
    shape.push_back(span <= 0 ? 0 : int64_t((uint64_t(span) - 1) / stride + 1));
  }
  return {{x.dtype, shape}};
}

int64_t movedBytes(const SpecCall &, const Types &out) {
  return out[0].bytes();
}

Types gather(const SpecCall &call) {
  const TensorType &data = call.in[0], &indices = call.in[1];
  int64_t axis = call.axis("axis", data.rank());
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  return {{data.dtype, shape}};
}

/// gather_elements's operands: indices of data's rank, no larger off the
/// axis. Returns the axis.
int64_t elementsAxis(const SpecCall &call, const std::vector<int64_t> &data,
                     const std::vector<int64_t> &indices) {
  int64_t axis = call.axis("axis", int64_t(data.size()));
  if (indices.size() != data.size())
    call.fail("indices have rank " + std::to_string(indices.size()) +
              ", data " + std::to_string(data.size()));
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis && indices[d] > data[d])
      call.fail("indices dim " + std::to_string(d) + " is " +
                std::to_string(indices[d]) + ", beyond data's " +
                std::to_string(data[d]));
  return axis;
}

Types gatherElements(const SpecCall &call) {
  elementsAxis(call, call.in[0].shape, call.in[1].shape);
  return {{call.in[0].dtype, call.in[1].shape}};
}

Types gatherElementsGrad(const SpecCall &call) {
  const std::vector<int64_t> &shape = call.attrs.ints("shape");
  elementsAxis(call, shape, call.in[1].shape);
  if (call.in[0].shape != call.in[1].shape)
    call.fail("grad and indices differ in shape");
  return {{call.in[0].dtype, shape}};
}

int64_t gatherBytes(const SpecCall &call, const Types &out) {
  // The gathered rows and the indices; never the whole table.
  return out[0].bytes() + call.in[1].bytes();
}

Types pad(const SpecCall &call) {
  // Any dtype: 16-bit tensors take the fill rounded to nearest (the CUDA
  // kernel's store; the CPU backend pads them widened to f32 and rounds).
  const TensorType &x = call.in[0];
  const std::vector<int64_t> &pads = call.attrs.ints("pads");
  int64_t rank = x.rank();
  if (int64_t(pads.size()) != 2 * rank)
    call.fail("attribute 'pads' has " + std::to_string(pads.size()) +
              " entries, rank " + std::to_string(rank) + " needs " +
              std::to_string(2 * rank));
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = call.add(call.add(x.shape[i], pads[i]), pads[i + rank]);
    if (d < 0)
      call.fail("pads crop dim " + std::to_string(i) + " below zero");
    shape.push_back(d);
  }
  return {{x.dtype, shape}};
}

Types trilu(const SpecCall &call) {
  if (call.in[0].rank() < 2)
    call.fail("input 0 " + typeString(call.in[0]) + " has rank < 2");
  return {call.in[0]};
}

Types resize(const SpecCall &call) {
  const TensorType &x = call.in[0];
  checkResizeModes(call, x.rank());
  const std::vector<int64_t> &sizes = call.attrs.ints("sizes");
  if (int64_t(sizes.size()) != x.rank())
    call.fail("attribute 'sizes' needs one entry per dim (" +
              std::to_string(x.rank()) + ")");
  // Every output element copies an input element: an empty input can only
  // give an empty output.
  for (int64_t d : sizes)
    if (d < 0 || (d > 0 && x.numel() == 0))
      call.fail("attribute 'sizes' " + shapeString(sizes) +
                " cannot be resized from " + typeString(x));
  return {{x.dtype, sizes}};
}

Types reduce(const SpecCall &call) {
  const TensorType &x = call.in[0];
  const std::vector<int64_t> &axes = call.attrs.ints("axes");
  bool keep = call.attrs.b("keepdims");
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] < 0 || axes[i] >= x.rank() || (i && axes[i] <= axes[i - 1]))
      call.fail("attribute 'axes' " + shapeString(axes) +
                " is not a sorted set of dims of rank " +
                std::to_string(x.rank()));
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      shape.push_back(x.shape[d]);
    else if (keep)
      shape.push_back(1);
  return {{x.dtype, shape}};
}

} // namespace

void checkResizeModes(const SpecCall &call, int64_t rank) {
  const std::vector<double> &scales = call.attrs.floats("scales");
  if (int64_t(scales.size()) != rank)
    call.fail("attribute 'scales' needs one entry per dim (" +
              std::to_string(rank) + ")");
  for (double s : scales)
    if (!(s > 0) || !std::isfinite(s))
      call.fail("attribute 'scales' holds " + std::to_string(s) +
                ", scales must be positive");
  const std::string &mode = call.attrs.s("coordinate_transformation_mode");
  static const char *modes[] = {"half_pixel", "pytorch_half_pixel",
                                "align_corners", "asymmetric",
                                "tf_half_pixel_for_nn"};
  if (std::find(std::begin(modes), std::end(modes), mode) == std::end(modes))
    call.fail("unknown coordinate_transformation_mode '" + mode + "'");
  const std::string &nearest = call.attrs.s("nearest_mode");
  static const char *nearestModes[] = {"round_prefer_floor",
                                       "round_prefer_ceil", "floor", "ceil"};
  if (std::find(std::begin(nearestModes), std::end(nearestModes), nearest) ==
      std::end(nearestModes))
    call.fail("unknown nearest_mode '" + nearest + "'");
}

void addTensorSpecs(std::vector<KernelSpec> &t) {
  t.push_back({.op = Op::MatMul,
               .source = "MatMul-13; transA/transB: weft.matmul's",
               .infer = matmul,
               .flops = matmulFlops});
  const std::vector<AttrSpec> gemmAttrs = {{"alpha", AttrKind::Float},
                                           {"beta", AttrKind::Float},
                                           {"transA", AttrKind::Bool},
                                           {"transB", AttrKind::Bool}};
  t.push_back(
      {.op = Op::Gemm, .source = "Gemm-13", .infer = gemm, .flops = gemmFlops});
  t.push_back({.op = Op::GemmGeluTanh,
               .source = "weft.gemm_gelu_tanh: Gemm-13, then Gelu-20 "
                         "(tanh) of its output",
               .infer = gemmGeluTanh,
               .flops = gemmGeluTanhFlops});
  t.push_back({.op = Op::GemmGeluTanhGrad,
               .source = "weft.gemm_gelu_tanh_grad: Gemm-13 (no C), then "
                         "the Gelu-20 (tanh) adjoint at the pre-activation",
               .infer = gemmGeluTanhGrad,
               .flops = gemmGeluTanhGradFlops});
  t.push_back({.op = Op::Transpose,
               .source = "Transpose-13",
               .infer = transpose,
               .flops = fromRecord});
  t.push_back({.op = Op::Expand,
               .source = "Expand-13",
               .infer = expand,
               .flops = fromRecord});
  t.push_back({.op = Op::Concat,
               .source = "Concat-13",
               .infer = concat,
               .flops = fromRecord,
               .dtypeNote = "alike"});
  t.push_back({.op = Op::Split,
               .source = "Split-13",
               .infer = split,
               .flops = fromRecord});
  t.push_back({.op = Op::Slice,
               .source = "Slice-13, bounds normalised",
               .infer = slice,
               .flops = fromRecord,
               .bytesRead = movedBytes});
  t.push_back({.op = Op::Gather,
               .source = "Gather-13",
               .infer = gather,
               .flops = fromRecord,
               .bytesRead = gatherBytes});
  t.push_back({.op = Op::GatherElements,
               .source = "GatherElements-13",
               .infer = gatherElements,
               .flops = fromRecord});
  t.push_back({.op = Op::GatherElementsGrad,
               .source = "GatherElements-13 adjoint (a sum per element)",
               .infer = gatherElementsGrad,
               .flops = fromRecord});
  t.push_back({.op = Op::Pad,
               .source = "Pad-13, constant mode",
               .infer = pad,
               .flops = fromRecord,
               .dtypeNote = "16-bit: the fill rounded to nearest"});
  t.push_back({.op = Op::Trilu,
               .source = "Trilu-14",
               .infer = trilu,
               .flops = fromRecord});
  t.push_back({.op = Op::Resize,
               .source = "Resize-13, nearest mode",
               .infer = resize,
               .flops = fromRecord});
  for (auto [name, source] : {std::pair{Op::ReduceSum, "ReduceSum-13"},
                              {Op::ReduceMean, "ReduceMean-13"},
                              {Op::ReduceMax, "ReduceMax-13"}})
    t.push_back(
        {.op = name, .source = source, .infer = reduce, .flops = fromRecord});
}

} // namespace weft::rt::specs
