//===- CudaKernels.h - the CUDA backend's kernels ---------------*- C++ -*-===//
//
// The kernels the CUDA backend implements, by plan kernel name, each
// enqueued on the context's compute stream (nothing synchronises the
// device). Their element and row math is the CPU kernels' (ElementwiseMath.h,
// RowMath.h, UpdateMath.h, DropoutMask.h, Half.h, MatmulShape.h,
// StridedView.h): f32, bf16 and f16 tensors load into f32 registers and
// store rounded to nearest even; GEMMs are cuBLASLt's and convolutions
// cuDNN's, f32 accumulation for every dtype. A plan naming a kernel missing
// here is refused at load (Backend::hasKernel), so a plan never runs half on
// the GPU.
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

/// A bad value a kernel met on the device (an index or a label out of
/// range), where it cannot throw: the first is recorded in host-mapped
/// memory and the backend throws it at its next synchronisation, naming
/// the instruction.
struct Fault {
  enum Kind : int { None = 0, Index = 1, Label = 2 };
  int kind = None;
  int64_t instruction = 0, value = 0, bound = 0;
};

/// Device bytes a kernel needs besides its operands (sort keys, per-row
/// partial sums): one buffer grown on the stream (cudaMallocAsync) to the
/// largest request, apart from the plan's arena like the libraries'
/// workspaces. Valid until the next get().
class Scratch {
public:
  void *get(size_t bytes, cudaStream_t stream);
  /// `table` copied into the buffer (ordered on `stream`; the host vector
  /// may go when this returns: a copy from pageable memory is staged
  /// before the call returns). Its device address.
  const int64_t *upload(const std::vector<int64_t> &table, cudaStream_t stream);
  /// The largest buffer it has held (bytes).
  size_t highWater() const { return high; }
  void release(cudaStream_t stream);

private:
  void *data = nullptr;
  size_t size = 0, high = 0;
};

struct ConvPlans;

/// cuDNN's handle, made (and cuDNN opened) by the first kernel that needs
/// it (Convolution.cpp), bound to the compute stream, with the
/// convolutions' plans (descriptors and algorithms) made so far.
class CudnnHandle {
public:
  CudnnHandle() = default;
  CudnnHandle(const CudnnHandle &) = delete;
  CudnnHandle &operator=(const CudnnHandle &) = delete;
  ~CudnnHandle() {
    if (handle)
      destroy(handle, plans);
  }
  /// The cudnnHandle_t, made on the first call.
  void *get(cudaStream_t stream);
  /// The convolution plans; valid once get() has made the handle.
  ConvPlans &convPlans() { return *plans; }

private:
  void *handle = nullptr;
  ConvPlans *plans = nullptr;
  void (*destroy)(void *, ConvPlans *) = nullptr; ///< set with the handle
};

class GemmPlans;

/// What a kernel launches with: the compute stream, cuBLASLt's handle, its
/// workspace (device bytes, apart from the plan's arena) and the GEMM
/// plans made so far (GemmPlan.h), cuDNN's handle, the scratch buffer, the
/// fault record, and whether f32 GEMMs and convolutions may use TF32.
struct Context {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  GemmPlans *gemmPlans = nullptr;
  CudnnHandle *cudnn = nullptr;
  Scratch *scratch = nullptr;
  Fault *fault = nullptr; ///< host-mapped: the device address
  bool tf32 = false;      ///< weft-run --allow-tf32
};

using KernelFn = void (*)(const KernelCall &, const Context &);
using KernelTable = OpTable<KernelFn>;

/// Unary and binary elementwise ops, cast, softmax and log_softmax
/// (Kernels.cu).
void registerElementwiseKernels(KernelTable &table);
/// AdamW, SGD (master copies, loss scaling), found_inf, update_loss_scale,
/// assign (Kernels.cu).
void registerUpdateKernels(KernelTable &table);
/// transpose, expand, slice, concat, split, pad (Movement.cu).
void registerMovementKernels(KernelTable &table);
/// The activations' gradients (relu, gelu, gelu_tanh), clip and clip_grad,
/// where, trilu, equal, dropout and dropout_grad (Pointwise.cu).
void registerPointwiseKernels(KernelTable &table);
/// softmax_grad, log_softmax_grad, layer_norm and its gradient: a warp per
/// row (Rows.cu).
void registerRowKernels(KernelTable &table);
/// softmax_cross_entropy, nll_loss, the vocabulary-parallel cross-entropy
/// and their gradients (Loss.cu).
void registerLossKernels(KernelTable &table);
/// reduce_sum, reduce_mean, reduce_max; gather and gather_grad (a stable
/// sort of the indices, so the scatter-add is deterministic), and their
/// vocabulary-parallel forms (Gather.cu).
void registerReductionKernels(KernelTable &table);
/// conv, conv_transpose, conv_weight_grad, batch_norm and batch_norm_grad
/// through cuDNN (Convolution.cpp; built when CMake finds cuDNN:
/// WEFT_HAVE_CUDNN).
void registerCudnnKernels(KernelTable &table);
/// attention and attention_grad through cuDNN's fused flash attention
/// (Attention.cpp; built when CMake finds cuDNN and its frontend headers:
/// WEFT_HAVE_CUDNN_FRONTEND).
void registerAttentionKernels(KernelTable &table);
/// max_pool, avg_pool and their gradients (Pooling.cu).
void registerPoolingKernels(KernelTable &table);
/// matmul and gemm through cuBLASLt (Gemm.cpp).
void registerGemmKernels(KernelTable &table);

/// Every kernel above.
const KernelTable &kernelTable();

/// The "adamw" calls of a run of consecutive instructions as multi-tensor
/// launches (Apex's multi_tensor_apply, torch's fused AdamW): one per
/// parameter dtype, loss scaler and hyperparameters, each element updated
/// as the one-tensor kernel updates it (Kernels.cu).
void adamwGroup(const std::vector<KernelCall> &calls, const Context &ctx);

/// The "sgd" calls of a run as multi-tensor launches, one per parameter
/// dtype, loss scaler and hyperparameters, as adamwGroup (Kernels.cu).
void sgdGroup(const std::vector<KernelCall> &calls, const Context &ctx);

/// Writes `src` broadcast (numpy's rule) into `dst`, of one dtype
/// (Kernels.cu).
void broadcastInto(const KernelCall &call, const Context &ctx,
                   const Tensor &src, const Tensor &dst);

/// sum [N] += the column sums of dy [M, N] (f32, rounded to sum's dtype
/// before the add, as a reduce_sum then an add) (Accumulate.cu).
void addColumnSums(const KernelCall &call, const Context &ctx,
                   const Tensor &sum, const Tensor &dy);

/// Throws Error naming the kernel: `dtype` has no CUDA implementation.
[[noreturn]] void unsupported(const KernelCall &call, DType dtype);

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H
