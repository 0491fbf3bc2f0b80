//===- CudaBackend.cpp - device memory and streams on a CUDA GPU ----------===//
//
// The CUDA backend's device side: the rank's arena in device memory, copies
// on a copy stream (a download waits for the compute stream's work through
// an event, as torchgpipe's copy streams do), and the compute stream the
// kernels (CudaKernels.h) are enqueued on, with cuBLASLt's workspace, the
// kernels' scratch buffer and the fault record their bad indices land in.
// A plan naming a kernel it lacks (convolution and batch norm when cuDNN
// was not found at build time) is refused by the plan loader, so a plan
// never runs half on the GPU.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"

#include "CublasLt.h"
#include "CudaCheck.h"
#include "CudaKernels.h"
#include "GemmPlan.h"

#include <algorithm>
#include <new>

namespace weft::rt {

namespace {

class CudaBackend final : public Backend {
public:
  CudaBackend(int device, bool allowTf32) : device(device) {
    context.tf32 = allowTf32;
    WEFT_CUDA_CHECK(cudaSetDevice(device));
    WEFT_CUDA_CHECK(cudaFree(nullptr)); // the context, before measuring
    size_t total = 0;
    WEFT_CUDA_CHECK(cudaMemGetInfo(&freeAtStart, &total));
    WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
    WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
    WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
    WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    context.stream = compute;
    WEFT_CUBLAS_CHECK(cuda::CublasLt::get().cublasLtCreate(&context.lt));
    // cuBLASLt's recommended workspace for Hopper: 32 MiB, apart from the
    // plan's arena (the libraries' memory, reported separately).
    context.workspaceBytes = 32u << 20;
    WEFT_CUDA_CHECK(cudaMalloc(&context.workspace, context.workspaceBytes));
    context.gemmPlans = &gemmPlans;
    context.scratch = &scratch;
    context.cudnn = &cudnn;
    // The fault record is host memory the device writes through.
    void *host = nullptr, *mapped = nullptr;
    WEFT_CUDA_CHECK(
        cudaHostAlloc(&host, sizeof(cuda::Fault), cudaHostAllocMapped));
    fault = new (host) cuda::Fault{};
    WEFT_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, host, 0));
    context.fault = static_cast<cuda::Fault *>(mapped);
  }
  ~CudaBackend() override {
    // Destruction cannot throw; a failing device reports at its next call.
    scratch.release(compute);
    cudaStreamSynchronize(compute);
    cudaFreeHost(fault);
    cudaFree(context.workspace);
    cuda::CublasLt::get().cublasLtDestroy(context.lt);
    cudaEventDestroy(copied);
    cudaStreamDestroy(comm);
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

  // Copies run on the copy stream after the kernels enqueued before them
  // and are complete when the call returns (the host buffer may be freed
  // then; kernels enqueued later see them). An upload must wait too: a
  // kernel still running may read the bytes it overwrites (a received
  // buffer takes arena bytes that were another's before the receive).
  void upload(void *device, const void *host, int64_t bytes) override {
    WEFT_CUDA_CHECK(cudaEventRecord(copied, compute));
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(copy, copied, 0));
    WEFT_CUDA_CHECK(
        cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, copy));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(copy));
  }
  void download(void *host, const void *device, int64_t bytes) override {
    WEFT_CUDA_CHECK(cudaEventRecord(copied, compute));
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(copy, copied, 0));
    WEFT_CUDA_CHECK(
        cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, copy));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(copy));
    // The copy waited for every kernel enqueued before it.
    checkFault();
  }

  // f32, bf16 and f16 arithmetic; integers and bools as indices, labels,
  // masks and moved bytes.
  bool computes(DType dtype) const override { return dtype != DType::F64; }
  bool hasKernel(const std::string &kernel) const override {
    return cuda::kernelTable().count(kernel) != 0;
  }
  void launch(const KernelCall &call) override {
    cuda::kernelTable().at(call.kernel)(call, context);
  }
  // The optimizer's AdamW updates, one launch per run of them (the
  // executor groups consecutive ones): GPT-2 medium has 292, 194 of them
  // of at most 4096 elements.
  bool launchesGrouped(const std::string &kernel) const override {
    return kernel == "adamw" || kernel == "sgd";
  }
  void launchGroup(const std::vector<KernelCall> &calls) override {
    if (calls.front().kernel == "sgd")
      return cuda::sgdGroup(calls, context);
    cuda::adamwGroup(calls, context);
  }
  void synchronize() override {
    WEFT_CUDA_CHECK(cudaStreamSynchronize(comm));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(copy));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(compute));
    checkFault();
  }
  void setThreads(int) override {}

  std::unique_ptr<Event> createEvent() override {
    auto event = std::make_unique<CudaEvent>();
    WEFT_CUDA_CHECK(cudaEventCreate(&event->event)); // timing enabled
    return event;
  }
  void record(Event &event, Stream stream) override {
    WEFT_CUDA_CHECK(
        cudaEventRecord(static_cast<CudaEvent &>(event).event, of(stream)));
  }
  void wait(Stream stream, const Event &event) override {
    WEFT_CUDA_CHECK(cudaStreamWaitEvent(
        of(stream), static_cast<const CudaEvent &>(event).event, 0));
  }
  double elapsedUs(const Event &from, const Event &to) override {
    float ms = 0;
    WEFT_CUDA_CHECK(
        cudaEventElapsedTime(&ms, static_cast<const CudaEvent &>(from).event,
                             static_cast<const CudaEvent &>(to).event));
    return 1000.0 * ms;
  }

  void *nativeStream(Stream stream) override { return of(stream); }

  int64_t workspaceBytes() const override {
    return int64_t(context.workspaceBytes + scratch.highWater());
  }
  int64_t deviceBytesInUse() const override {
    size_t available = 0, total = 0;
    if (cudaMemGetInfo(&available, &total) != cudaSuccess)
      return -1;
    return int64_t(freeAtStart) - int64_t(available);
  }

  void *allocateHost(int64_t bytes) override {
    void *host = nullptr;
    cudaError_t status =
        cudaHostAlloc(&host, std::max<int64_t>(bytes, 1), cudaHostAllocDefault);
    if (status == cudaErrorMemoryAllocation)
      throw Error("cannot allocate " + std::to_string(bytes) +
                  " bytes of pinned host memory for " + name());
    WEFT_CUDA_CHECK(status);
    return host;
  }
  void freeHost(void *host) override { cudaFreeHost(host); }

private:
  struct CudaEvent final : Event {
    cudaEvent_t event = nullptr;
    ~CudaEvent() override { cudaEventDestroy(event); }
  };
  cudaStream_t of(Stream stream) const {
    return stream == Stream::Compute ? compute : comm;
  }

  /// Throws the first fault a kernel recorded since the last check.
  void checkFault() {
    if (fault->kind == cuda::Fault::None)
      return;
    cuda::Fault seen = *fault;
    *fault = cuda::Fault{};
    bool label = seen.kind == cuda::Fault::Label;
    std::string bound = std::to_string(seen.bound);
    throw Error("instruction " + std::to_string(seen.instruction) + ": " +
                (label ? "label " : "index ") + std::to_string(seen.value) +
                " out of range [" + (label ? "0" : "-" + bound) + ", " + bound +
                ") (found on " + name() + ")");
  }

  int device;
  size_t freeAtStart = 0; ///< device bytes free once the context existed
  /// Kernels; transfers and collectives; uploads and downloads.
  cudaStream_t compute = nullptr, comm = nullptr, copy = nullptr;
  cudaEvent_t copied = nullptr;
  cuda::Scratch scratch;
  cuda::GemmPlans gemmPlans;
  cuda::CudnnHandle cudnn;
  cuda::Fault *fault = nullptr; ///< host address
  cuda::Context context;
};

} // namespace

namespace cuda {

void *Scratch::get(size_t bytes, cudaStream_t stream) {
  if (bytes <= size)
    return data;
  // Stream-ordered: kernels enqueued before still read the old buffer.
  release(stream);
  WEFT_CUDA_CHECK(cudaMallocAsync(&data, bytes, stream));
  size = bytes;
  high = std::max(high, size);
  return data;
}

const int64_t *Scratch::upload(const std::vector<int64_t> &table,
                               cudaStream_t stream) {
  size_t bytes = table.size() * sizeof(int64_t);
  void *device = get(bytes, stream);
  WEFT_CUDA_CHECK(cudaMemcpyAsync(device, table.data(), bytes,
                                  cudaMemcpyHostToDevice, stream));
  return static_cast<const int64_t *>(device);
}

void Scratch::release(cudaStream_t stream) {
  if (data)
    cudaFreeAsync(data, stream);
  data = nullptr;
  size = 0;
}

} // namespace cuda

std::unique_ptr<Backend> createCudaBackend(int localRank, bool allowTf32) {
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
  return std::make_unique<CudaBackend>(std::max(localRank, 0) % count,
                                       allowTf32);
}

} // namespace weft::rt
