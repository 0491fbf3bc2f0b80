//===- Glu.h - the gated linear unit's activations --------------*- C++ -*-===//
//
// weft.glu's `activation` attribute (Shazeer 2020, "GLU Variants Improve
// Transformer"): its names and FLOPs per element, read by the compiler's
// cost, the kernel specification and the kernels, so they cannot disagree.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_OPS_GLU_H
#define WEFT_OPS_GLU_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace weft::ops {

/// silu(g) u (SwiGLU), gelu(g) u (GeGLU, erf form), gelu_tanh(g) u.
enum class GluActivation { Silu, Gelu, GeluTanh };

/// The activation an `activation` attribute names; nothing for another.
inline std::optional<GluActivation> gluActivationNamed(std::string_view name) {
  if (name == "silu")
    return GluActivation::Silu;
  if (name == "gelu")
    return GluActivation::Gelu;
  if (name == "gelu_tanh")
    return GluActivation::GeluTanh;
  return std::nullopt;
}

/// FLOPs per element of glu (`grad` false) or glu_grad: the activation's
/// (sigmoid 4 and its product; weft.gelu's 5, weft.gelu_tanh's 9) and the
/// gate's product; the backward recomputes the activation, takes its
/// derivative (silu 5, gelu 5, gelu_tanh 14) and three products.
inline int64_t gluFlopsPerElement(GluActivation a, bool grad) {
  switch (a) {
  case GluActivation::Silu:
    return grad ? 12 : 6;
  case GluActivation::Gelu:
    return grad ? 12 : 6;
  case GluActivation::GeluTanh:
    return grad ? 24 : 10;
  }
  return 0;
}

} // namespace weft::ops

#endif // WEFT_OPS_GLU_H
