//===- OpRecord.cpp - Ops.def as a table ----------------------------------===//

#include "weft/ops/OpRecord.h"

#include <unordered_map>

namespace weft::ops {

const OpRecord (&opRecords())[kOpCount] {
  static const OpRecord records[kOpCount] = {
#define PerInput(k)                                                            \
  FlopRule { FlopRule::Input, k }
#define PerOutput(k)                                                           \
  FlopRule { FlopRule::Output, k }
#define NoFlops                                                                \
  FlopRule { FlopRule::None, 0 }
#define Custom                                                                 \
  FlopRule { FlopRule::Custom, 0 }
#define WEFT_OP(Id, mnemonic, lowering, backends, gradient, precision, split,  \
                flops)                                                         \
  {Op::Id,                                                                     \
   mnemonic,                                                                   \
   Lowering::lowering,                                                         \
   Backends::backends,                                                         \
   Gradient::gradient,                                                         \
   Precision::precision,                                                       \
   Split::split,                                                               \
   flops},
#include "weft/ops/Ops.def"
#undef PerInput
#undef PerOutput
#undef NoFlops
#undef Custom
  };
  return records;
}

const OpRecord *findOpRecord(std::string_view mnemonic) {
  // Hashed once: the compiler looks an op up at every verification of it,
  // plan loading every instruction.
  static const std::unordered_map<std::string_view, const OpRecord *> byName =
      [] {
        std::unordered_map<std::string_view, const OpRecord *> m;
        for (const OpRecord &r : opRecords())
          m.emplace(r.mnemonic, &r);
        return m;
      }();
  auto it = byName.find(mnemonic);
  return it == byName.end() ? nullptr : it->second;
}

bool isCompilerAttribute(Op op, std::string_view attribute) {
#define WEFT_OP_COMPILER_ATTR(Id, name)                                        \
  if (op == Op::Id && attribute == name)                                       \
    return true;
#include "weft/ops/Ops.def"
  return false;
}

const char *name(Lowering v) {
  switch (v) {
  case Lowering::Kernel:
    return "kernel";
  case Lowering::View:
    return "view";
  case Lowering::Constant:
    return "constant";
  case Lowering::Instruction:
    return "instruction";
  }
  return "?";
}

const char *name(Backends v) {
  switch (v) {
  case Backends::CpuCuda:
    return "CPU, CUDA";
  case Backends::CpuOnly:
    return "CPU";
  case Backends::NoKernel:
    return "none";
  }
  return "?";
}

const char *name(Gradient v) {
  switch (v) {
  case Gradient::Rule:
    return "rule";
  case Gradient::NotDifferentiable:
    return "not differentiable";
  }
  return "?";
}

const char *name(Precision v) {
  switch (v) {
  case Precision::Low:
    return "low";
  case Precision::Full:
    return "f32";
  case Precision::Promote:
    return "promote";
  case Precision::Follow:
    return "follow";
  }
  return "?";
}

const char *name(Split v) {
  switch (v) {
  case Split::Elementwise:
    return "elementwise";
  case Split::ElementwiseRandom:
    return "elementwise (random)";
  case Split::Heads:
    return "heads";
  case Split::Softmax:
    return "softmax";
  case Split::LayerNorm:
    return "layer norm";
  case Split::Layout:
    return "layout";
  case Split::Linear:
    return "linear";
  case Split::Vocab:
    return "vocab";
  case Split::None:
    return "none";
  }
  return "?";
}

} // namespace weft::ops
