//===- CudaBackend.cpp - device memory and streams on a CUDA GPU ----------===//
//
// The CUDA backend's device side: the rank's arena in device memory, copies
// on a copy stream (a download waits for the compute stream's work through
// an event, as torchgpipe's copy streams do), and the compute stream the
// kernels (CudaKernels.h: elementwise, cast, updates, cuBLASLt GEMM) are
// enqueued on, with cuBLASLt's workspace. A plan naming a kernel it lacks
// (convolution, normalisation, softmax, losses, movement: cuDNN and weft's
// own kernels are issue 15's next steps) is refused by the plan loader, so
// a plan never runs half on the GPU.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"

#include "CublasLt.h"
#include "CudaCheck.h"
#include "CudaKernels.h"

#include <algorithm>

namespace weft::rt {

namespace {

class CudaBackend final : public Backend {
public:
  explicit CudaBackend(int device) : device(device) {
    WEFT_CUDA_CHECK(cudaSetDevice(device));
    WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
    WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    context.stream = compute;
    WEFT_CUBLAS_CHECK(cuda::CublasLt::get().cublasLtCreate(&context.lt));
    // cuBLASLt's recommended workspace for Hopper: 32 MiB, apart from the
    // plan's arena (the libraries' memory, reported separately).
    context.workspaceBytes = 32u << 20;
    WEFT_CUDA_CHECK(cudaMalloc(&context.workspace, context.workspaceBytes));
  }
  ~CudaBackend() override {
    // Destruction cannot throw; a failing device reports at its next call.
    cudaFree(context.workspace);
    cuda::CublasLt::get().cublasLtDestroy(context.lt);
    cudaEventDestroy(copied);
    cudaStreamDestroy(copy);
    cudaStreamDestroy(compute);
  }

  std::string name() const override { return "cuda:" + std::to_string(device); }

  void *allocateArena(int64_t bytes) override {
    void *arena = nullptr;
    // cudaMalloc aligns to at least 256 bytes.
    cudaError_t status = cudaMalloc(&arena, std::max<int64_t>(bytes, 1));
    if (status == cudaErrorMemoryAllocation)
      throw Error("cannot allocate an arena of " + std::to_string(bytes) +
                  " bytes on " + name());
    WEFT_CUDA_CHECK(status);
    WEFT_CUDA_CHECK(
        cudaMemsetAsync(arena, 0, std::max<int64_t>(bytes, 1), copy));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(copy));
    return arena;
  }
  void freeArena(void *arena) override { cudaFree(arena); }

  // Copies run on the copy stream and are complete when the call returns
  // (the host buffer may be freed then; kernels enqueued later read them).
  void upload(void *device, const void *host, int64_t bytes) override {
    WEFT_CUDA_CHECK(
        cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, copy));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(copy));
  }
  void download(void *host, const void *device, int64_t bytes) override {
    // What the compute stream has enqueued comes first.
    WEFT_CUDA_CHECK(cudaEventRecord(copied, compute));
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(copy, copied, 0));
    WEFT_CUDA_CHECK(
        cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, copy));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(copy));
  }

  bool hasKernel(const std::string &kernel) const override {
    return cuda::kernelTable().count(kernel) != 0;
  }
  void launch(const KernelCall &call) override {
    cuda::kernelTable().at(call.kernel)(call, context);
  }
  void synchronize() override {
    WEFT_CUDA_CHECK(cudaStreamSynchronize(copy));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(compute));
  }
  void setThreads(int) override {}

private:
  int device;
  cudaStream_t compute = nullptr, copy = nullptr;
  cudaEvent_t copied = nullptr;
  cuda::Context context;
};

} // namespace

std::unique_ptr<Backend> createCudaBackend(int localRank) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    throw Error("--device cuda: no CUDA device (" +
                std::string(status == cudaSuccess
                                ? "cudaGetDeviceCount: 0 devices"
                                : std::string("cudaGetDeviceCount: ") +
                                      cudaGetErrorName(status) + ", " +
                                      cudaGetErrorString(status)) +
                ")");
  // Ranks on one node take its GPUs in turn.
  return std::make_unique<CudaBackend>(std::max(localRank, 0) % count);
}

} // namespace weft::rt
