//===- Registry.cpp - the kernel table ------------------------------------===//

#include "Kernel.h"

namespace weft::rt {

const KernelTable &kernelTable() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerLinearAlgebraKernels(t);
    registerNormalizationKernels(t);
    registerReductionKernels(t);
    registerMovementKernels(t);
    registerConvolutionKernels(t);
    registerPoolingKernels(t);
    registerLossKernels(t);
    registerBackwardKernels(t);
    registerOptimizerKernels(t);
    registerVocabParallelKernels(t);
    registerAttentionKernels(t);
    registerRotaryKernels(t);
    return t;
  }();
  return table;
}

} // namespace weft::rt
