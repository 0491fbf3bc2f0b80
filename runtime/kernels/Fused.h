//===- Fused.h - the CPU's fused kernels: the kernels they fuse -*- C++ -*-===//
//
// A kernel that exists to save a GPU memory traffic (the sum of a residual
// add normalised from registers, a bias gradient summed in a GEMM's
// epilogue) runs on the CPU as the kernels it fuses, each launched as the
// backend launches any kernel: 16-bit operands widened and each part's
// outputs rounded to their storage, as the unfused instructions' are. Its
// CPU result is so the unfused graph's, to the bit, by construction: the
// oracle the CUDA kernel is held to (the conformance test), and why a fold
// that makes one leaves the CPU's losses unchanged. The CUDA backend runs
// the same parts where cuBLASLt has no algorithm for the fused epilogue.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_FUSED_H
#define WEFT_RUNTIME_KERNELS_FUSED_H

#include "Kernel.h"

#include <functional>
#include <map>
#include <string>

namespace weft::rt {

/// Launches one part of a fused kernel (CpuBackend::launch, or the CUDA
/// backend's kernel table).
using PartLauncher = std::function<void(const KernelCall &)>;
/// A fused kernel: launches its parts, in order, through `launch`.
using FusedFn = void (*)(const KernelCall &call, const PartLauncher &launch);

/// Every fused kernel, by plan kernel name, as its parts; none of them is
/// in the CPU's kernelTable().
const OpTable<FusedFn> &fusedKernels();

/// The parts `call` runs as on the CPU, or null where it is one of
/// kernelTable()'s: a fused kernel's, or the accumulating form of a
/// kernel whose plain form is one kernel (gather_grad and
/// vocab_parallel_gather_grad accumulating: the scatter-add into a table
/// of its own, then the add it replaced). An accumulating form's own part
/// is host memory, so the CUDA backend never runs one as parts: it has
/// kernels of its own for them (wgrad_bias with sums, the scatter-adds).
FusedFn partsOf(const KernelCall &call);

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_FUSED_H
