//===- CudaKernels.h - the CUDA backend's kernels ---------------*- C++ -*-===//
//
// The kernels the CUDA backend implements, by plan kernel name, each
// enqueued on the context's compute stream (nothing synchronises the
// device). Their element math is the CPU kernels' (ElementwiseMath.h,
// UpdateMath.h, Half.h, MatmulShape.h, StridedView.h): f32, bf16 and f16 tensors load into f32 registers
// and store rounded to nearest even; GEMMs are cuBLASLt's, f32 accumulation
// for every dtype. A plan naming a kernel missing here is refused at load
// (Backend::hasKernel), so a plan never runs half on the GPU.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H
#define WEFT_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H

#include "../../kernels/Kernel.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <map>
#include <string>

namespace weft::rt::cuda {

/// What a kernel launches with: the compute stream, cuBLASLt's handle and
/// its workspace (device bytes, apart from the plan's arena).
struct Context {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
};

using KernelFn = void (*)(const KernelCall &, const Context &);
using KernelTable = std::map<std::string, KernelFn>;

/// Unary and binary elementwise ops, cast, softmax and log_softmax
/// (Kernels.cu).
void registerElementwiseKernels(KernelTable &table);
/// AdamW, SGD (master copies, loss scaling), found_inf, update_loss_scale,
/// assign (Kernels.cu).
void registerUpdateKernels(KernelTable &table);
/// transpose, expand, slice, concat, split (Movement.cu).
void registerMovementKernels(KernelTable &table);
/// matmul and gemm through cuBLASLt (Gemm.cpp).
void registerGemmKernels(KernelTable &table);

/// Every kernel above.
const KernelTable &kernelTable();

/// Writes `src` broadcast (numpy's rule) into `dst`, of one dtype
/// (Kernels.cu).
void broadcastInto(const KernelCall &call, const Context &ctx,
                   const Tensor &src, const Tensor &dst);

/// Throws Error naming the kernel: `dtype` has no CUDA implementation.
[[noreturn]] void unsupported(const KernelCall &call, DType dtype);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H
