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

KernelSpec unary(const char *name, const char *source,
                 int64_t (*flops)(const SpecCall &, const Types &)) {
  return {.name = name,
          .source = source,
          .minInputs = 1,
          .maxInputs = 1,
          .attrs = {},
          .infer = likeFloatInput,
          .flops = flops};
}

Types broadcastBinary(const SpecCall &call) {
  requireNumeric(call, 0);
  call.requireSameDType(0, 1);
  return {
      {call.in[0].dtype, call.broadcast(call.in[0].shape, call.in[1].shape)}};
}

KernelSpec binary(const char *name, const char *source) {
  return {.name = name,
          .source = source,
          .minInputs = 2,
          .maxInputs = 2,
          .attrs = {},
          .infer = broadcastBinary,
          .flops = perOutput<1>,
          .dtypes = "f32, f64, integers (alike)"};
}

Types pow(const SpecCall &call) {
  // Pow-15 lets the exponent have its own numeric type.
  requireNumeric(call, 0);
  requireNumeric(call, 1);
  return {
      {call.in[0].dtype, call.broadcast(call.in[0].shape, call.in[1].shape)}};
}

Types equal(const SpecCall &call) {
  if (call.in[0].dtype != DType::Bool)
    requireNumeric(call, 0);
  call.requireSameDType(0, 1);
  return {{DType::Bool, call.broadcast(call.in[0].shape, call.in[1].shape)}};
}

Types where(const SpecCall &call) {
  if (call.in[0].dtype != DType::Bool)
    call.fail("input 0 (the condition) is " +
              std::string(dtypeName(call.in[0].dtype)) + ", expected bool");
  call.requireSameDType(1, 2);
  std::vector<int64_t> xy = call.broadcast(call.in[1].shape, call.in[2].shape);
  return {{call.in[1].dtype, call.broadcast(call.in[0].shape, xy)}};
}

Types clip(const SpecCall &call) {
  requireNumeric(call, 0);
  return {call.in[0]};
}

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
  for (auto [name, source] : {std::pair{"sqrt", "Sqrt-13"},
                              {"reciprocal", "Reciprocal-13"},
                              {"neg", "Neg-13"},
                              {"exp", "Exp-13"},
                              {"log", "Log-13"},
                              {"erf", "Erf-13"},
                              {"tanh", "Tanh-13"},
                              {"relu", "Relu-14"},
                              {"sigmoid", "Sigmoid-13"}})
    t.push_back(unary(name, source, perOutput<1>));
  // Exact GELU (Gelu-20 default) and its tanh approximation: the FLOPs the
  // fused erf/tanh chains count (Korthikanti et al. 2022, section 4.1).
  t.push_back(unary("gelu", "Gelu-20, approximate none", perOutput<5>));
  t.push_back(unary("gelu_tanh", "Gelu-20, approximate tanh", perOutput<9>));
  for (auto [name, source] : {std::pair{"add", "Add-14"},
                              {"sub", "Sub-14"},
                              {"mul", "Mul-14"},
                              {"div", "Div-14"}})
    t.push_back(binary(name, source));
  t.push_back({.name = "pow",
               .source = "Pow-15",
               .minInputs = 2,
               .maxInputs = 2,
               .attrs = {},
               .infer = pow,
               .flops = perOutput<1>,
               .dtypes = "f32, f64, integers (the exponent any of them)"});
  t.push_back({.name = "equal",
               .source = "Equal-13",
               .minInputs = 2,
               .maxInputs = 2,
               .attrs = {},
               .infer = equal,
               .flops = perOutput<1>,
               .dtypes = "f32, f64, integers, bool (alike); output bool"});
  t.push_back({.name = "where",
               .source = "Where-16",
               .minInputs = 3,
               .maxInputs = 3,
               .attrs = {},
               .infer = where,
               .flops = perOutput<1>,
               .dtypes = "condition bool; x, y any (alike)"});
  t.push_back({.name = "clip",
               .source = "Clip-13, bounds as attributes",
               .minInputs = 1,
               .maxInputs = 1,
               .attrs = {{"min", AttrKind::Float, false},
                         {"max", AttrKind::Float, false}},
               .infer = clip,
               .flops = perOutput<1>,
               .dtypes = "f32, f64, integers"});
  t.push_back({.name = "cast",
               .source = "Cast-13",
               .minInputs = 1,
               .maxInputs = 1,
               .attrs = {{"to", AttrKind::String},
                         {"nearest_even", AttrKind::Bool, false}},
               .infer = cast,
               .flops = perOutput<1>,
               .dtypes = "any, to the attribute `to`"});
}

} // namespace weft::rt::specs
