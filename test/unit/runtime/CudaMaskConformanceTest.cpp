//===- CudaMaskConformanceTest.cpp - the kernels of traced masks ----------===//
//
// The CUDA kernels exporters' masks, positions and rotary tables run on
// (compare, logical, not, is_nan, is_inf, sin, cos, cumsum, gather_elements
// and its gradient) against the CPU's (the harness: CudaConformance.h; the
// suite is instantiated in CudaConformanceTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaConformance.h"

using namespace weft::rt;
using namespace weft::rt::conformance;

namespace {

/// The order comparisons on floats and integers with broadcasting (whole
/// numbers: some pairs tie, so each predicate's edge is exercised), the
/// logic of masks, not, and the float tests (the drawn values hold no NaN or
/// infinity: the tests' false side; their true side is the CPU spec
/// tests'), sin and cos; cumsum along a middle axis, each way;
/// gather_elements and its gradient.
TEST_P(CudaConformance, CompareLogicAndFloatTests) {
  for (std::string predicate :
       {"less", "less_equal", "greater", "greater_equal"}) {
    for (DType d : floats()) {
      Case c{"compare", {{d, {4, 6}}, {d, {6}}}, {{DType::Bool, {4, 6}}}};
      c.below = {{0, 3}, {1, 3}};
      c.attrs.set("predicate", predicate);
      expectConforms(c, *gpu);
    }
    Case ints{"compare",
              {{DType::I64, {4, 1, 6}}, {DType::I64, {5, 1}}},
              {{DType::Bool, {4, 5, 6}}}};
    ints.below = {{0, 3}, {1, 3}};
    ints.attrs.set("predicate", predicate);
    expectConforms(ints, *gpu);
  }
  for (std::string kind : {"and", "or", "xor"}) {
    Case c{"logical",
           {{DType::Bool, {3, 1, 5}}, {DType::Bool, {4, 1}}},
           {{DType::Bool, {3, 4, 5}}}};
    c.attrs.set("kind", kind);
    c.below = {{0, 2}, {1, 2}};
    expectConforms(c, *gpu);
  }
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true}) {
      for (DType d : floats()) {
        Case c{"cumsum", {{d, {3, 9, 4}}}, {{d, {3, 9, 4}}}};
        c.attrs.set("axis", int64_t{1});
        c.attrs.set("exclusive", exclusive);
        c.attrs.set("reverse", reverse);
        expectConforms(c, *gpu);
      }
      Case ints{"cumsum", {{DType::I64, {2, 6}}}, {{DType::I64, {2, 6}}}};
      ints.below = {{0, 5}};
      ints.attrs.set("axis", int64_t{1});
      ints.attrs.set("exclusive", exclusive);
      ints.attrs.set("reverse", reverse);
      expectConforms(ints, *gpu);
    }
  // gather_elements and its gradient: indices smaller than the data off the
  // axis, repeated along it (the gradient sums the repeats).
  for (DType d : floats()) {
    Case g{"gather_elements",
           {{d, {3, 5, 4}}, {DType::I64, {2, 7, 4}}},
           {{d, {2, 7, 4}}}};
    g.below = {{1, 5}};
    g.attrs.set("axis", int64_t{1});
    expectConforms(g, *gpu);
    Case grad{"gather_elements_grad",
              {{d, {2, 7, 4}}, {DType::I64, {2, 7, 4}}},
              {{d, {3, 5, 4}}}};
    grad.below = {{1, 5}};
    grad.attrs.set("axis", int64_t{1});
    grad.attrs.set("shape", std::vector<int64_t>{3, 5, 4});
    expectConforms(grad, *gpu);
  }
  Case negation{"not", {{DType::Bool, {7, 3}}}, {{DType::Bool, {7, 3}}}};
  negation.below = {{0, 2}};
  expectConforms(negation, *gpu);
  for (DType d : floats()) {
    expectConforms(Case{"is_nan", {{d, {5, 4}}}, {{DType::Bool, {5, 4}}}},
                   *gpu);
    Case inf{"is_inf", {{d, {5, 4}}}, {{DType::Bool, {5, 4}}}};
    inf.attrs.set("detect_negative", true);
    inf.attrs.set("detect_positive", false);
    expectConforms(inf, *gpu);
    expectConforms(Case{"sin", {{d, {5, 4}}}, {{d, {5, 4}}}}, *gpu);
    expectConforms(Case{"cos", {{d, {5, 4}}}, {{d, {5, 4}}}}, *gpu);
  }
}

} // namespace
