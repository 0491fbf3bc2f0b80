//===- ElementwiseSpecs.cpp - unary, binary, where, clip, cast ------------===//
//
// Binary ops broadcast numpy-style (ONNX "Broadcasting in ONNX",
// docs/Broadcasting.md, multidirectional); the output takes the first
// operand's dtype.
//
//===----------------------------------------------------------------------===//

#include "Specs.h"

namespace weft::rt::specs {

namespace {

KernelSpec unary(Op name, const char *source,
                 int64_t (*flops)(const SpecCall &, const Types &)) {
  return {.op = name, .source = source, .infer = likeInput, .flops = flops};
}

Types broadcastBinary(const SpecCall &call) {
  call.requireSameDType(0, 1);
  return {
      {call.in[0].dtype, call.broadcast(call.in[0].shape, call.in[1].shape)}};
}

KernelSpec binary(Op name, const char *source) {
  return {.op = name,
          .source = source,
          .infer = broadcastBinary,
          .flops = fromRecord,
          .dtypeNote = "alike"};
}

Types pow(const SpecCall &call) {
  // Pow-15 lets the exponent have its own numeric type.
  return {
      {call.in[0].dtype, call.broadcast(call.in[0].shape, call.in[1].shape)}};
}

Types equal(const SpecCall &call) {
  call.requireSameDType(0, 1);
  return {{DType::Bool, call.broadcast(call.in[0].shape, call.in[1].shape)}};
}

Types compare(const SpecCall &call) {
  const std::string &p = call.attrs.s("predicate");
  if (p != "less" && p != "less_equal" && p != "greater" &&
      p != "greater_equal")
    call.fail("predicate '" + p +
              "' is not less, less_equal, greater or greater_equal");
  return equal(call);
}

Types logical(const SpecCall &call) {
  const std::string &k = call.attrs.s("kind");
  if (k != "and" && k != "or" && k != "xor")
    call.fail("kind '" + k + "' is not and, or or xor");
  return equal(call);
}

/// cumsum: the input's type, along an axis of it.
Types cumsum(const SpecCall &call) {
  call.axis("axis", call.in[0].rank());
  return {call.in[0]};
}

/// A float -> bool test per element: the input's shape, bool.
Types classify(const SpecCall &call) {
  return {{DType::Bool, call.in[0].shape}};
}

Types where(const SpecCall &call) {
  call.requireSameDType(1, 2);
  std::vector<int64_t> xy = call.broadcast(call.in[1].shape, call.in[2].shape);
  return {{call.in[1].dtype, call.broadcast(call.in[0].shape, xy)}};
}

Types clip(const SpecCall &call) { return {call.in[0]}; }

} // namespace

namespace {

ops::GluActivation gluActivation(const SpecCall &call) {
  std::optional<ops::GluActivation> a =
      ops::gluActivationNamed(call.attrs.s("activation"));
  if (!a)
    call.fail("attribute 'activation' is '" + call.attrs.s("activation") +
              "', expected \"silu\", \"gelu\" or \"gelu_tanh\"");
  return *a;
}

} // namespace

TensorType gluOperands(const SpecCall &call) {
  gluActivation(call);
  call.requireType(1, call.in[0], "up");
  return call.in[0];
}

int64_t gluFlops(const SpecCall &call, bool grad) {
  return satMul(ops::gluFlopsPerElement(gluActivation(call), grad),
                call.in[0].numel());
}

namespace {

/// glu (gate, up): one type, no broadcasting (the projections' outputs).
Types glu(const SpecCall &call) { return {gluOperands(call)}; }

Types cast(const SpecCall &call) {
  DType to;
  try {
    to = parseDType(call.attrs.s("to"));
  } catch (const Error &e) {
    call.fail(std::string("attribute 'to': ") + e.what());
  }
  return {{to, call.in[0].shape}};
}

} // namespace

void addElementwiseSpecs(std::vector<KernelSpec> &t) {
  for (auto [name, source] : {std::pair{Op::Sqrt, "Sqrt-13"},
                              {Op::Reciprocal, "Reciprocal-13"},
                              {Op::Neg, "Neg-13"},
                              {Op::Exp, "Exp-13"},
                              {Op::Log, "Log-13"},
                              {Op::Erf, "Erf-13"},
                              {Op::Tanh, "Tanh-13"},
                              {Op::Relu, "Relu-14"},
                              {Op::Sigmoid, "Sigmoid-13"},
                              {Op::Sin, "Sin-7"},
                              {Op::Cos, "Cos-7"},
                              {Op::Not, "Not-1"}})
    t.push_back(unary(name, source, fromRecord));
  // Exact GELU (Gelu-20 default) and its tanh approximation: the FLOPs the
  // fused erf/tanh chains count (Korthikanti et al. 2022, section 4.1).
  t.push_back(unary(Op::Gelu, "Gelu-20, approximate none", fromRecord));
  t.push_back(unary(Op::GeluTanh, "Gelu-20, approximate tanh", fromRecord));
  t.push_back({.op = Op::Glu,
               .source = "gated linear unit (Shazeer 2020: SwiGLU, GeGLU)",
               .infer = glu,
               .flops = [](const SpecCall &c,
                           const Types &) { return gluFlops(c, false); },
               .dtypeNote = "alike"});
  for (auto [name, source] : {std::pair{Op::Add, "Add-14"},
                              {Op::Sub, "Sub-14"},
                              {Op::Mul, "Mul-14"},
                              {Op::Div, "Div-14"},
                              {Op::Max, "Max-13 (two operands)"},
                              {Op::Min, "Min-13 (two operands)"}})
    t.push_back(binary(name, source));
  t.push_back({.op = Op::Pow,
               .source = "Pow-15",
               .infer = pow,
               .flops = fromRecord,
               .dtypeNote = "the exponent its own dtype"});
  t.push_back({.op = Op::Equal,
               .source = "Equal-13",
               .infer = equal,
               .flops = fromRecord,
               .dtypeNote = "alike; output bool"});
  t.push_back({.op = Op::Compare,
               .source = "Less-13, LessOrEqual-16, Greater-13, "
                         "GreaterOrEqual-16 (`predicate`)",
               .infer = compare,
               .flops = fromRecord,
               .dtypeNote = "alike; output bool"});
  t.push_back({.op = Op::Logical,
               .source = "And-7, Or-7, Xor-7 (`kind`)",
               .infer = logical,
               .flops = fromRecord,
               .dtypeNote = "output bool"});
  t.push_back({.op = Op::CumSum,
               .source = "CumSum-14, axis as an attribute",
               .infer = cumsum,
               .flops = fromRecord});
  t.push_back({.op = Op::IsNaN,
               .source = "IsNaN-20",
               .infer = classify,
               .flops = fromRecord,
               .dtypeNote = "output bool"});
  t.push_back({.op = Op::IsInf,
               .source = "IsInf-20",
               .infer = classify,
               .flops = fromRecord,
               .dtypeNote = "output bool"});
  t.push_back({.op = Op::Where,
               .source = "Where-16",
               .infer = where,
               .flops = fromRecord,
               .dtypeNote = "x, y alike"});
  t.push_back({.op = Op::Clip,
               .source = "Clip-13, bounds as attributes",
               .infer = clip,
               .flops = fromRecord});
  t.push_back({.op = Op::Cast,
               .source = "Cast-13",
               .infer = cast,
               .flops = fromRecord,
               .dtypeNote = "output the attribute `to`"});
}

} // namespace weft::rt::specs
