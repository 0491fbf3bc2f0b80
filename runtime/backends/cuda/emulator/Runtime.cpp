//===- Runtime.cpp - the CUDA runtime calls weft makes, on the host -------===//
//
// The CUDA emulator's device: the runtime functions the CUDA backend calls
// (cuda_runtime_api.h's declarations, defined here instead of by cudart),
// over host memory. WEFT_CUDA_EMULATOR_DEVICES devices (default 1: ranks
// on one node share it, as on one lent GPU). Every stream is the host
// thread: kernel launches and the emulated NCCL's operations are deferred
// work on their stream (defer), run in stream order when the stream or an
// event after them is waited for, synchronised or queried, or when a copy,
// memset or stream-ordered allocation is enqueued after them (which then
// runs at once); cudaFree and cudaFreeHost synchronise the device, as
// CUDA's do. Events record the host clock. Device memory is counted, so
// cudaMemGetInfo (the backend's measured peak) sees the arena and the
// scratch buffers, and new device bytes are all ones, not zeros.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

namespace {
/// Deferred work on a stream, completed once.
struct Pending {
  std::function<void()> complete;
  bool done = false;
};
using PendingList = std::vector<std::shared_ptr<Pending>>;
void complete(PendingList &list) {
  for (auto &p : list)
    if (!p->done) {
      p->done = true;
      p->complete();
    }
  list.clear();
}
} // namespace

struct CUstream_st {
  PendingList pending;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
  PendingList pending; ///< its stream's, when recorded
};

namespace {
/// The streams alive: a device-wide synchronisation completes them all.
std::vector<cudaStream_t> &streams() {
  static std::vector<cudaStream_t> alive;
  return alive;
}
void synchronizeDevice() {
  for (cudaStream_t stream : streams())
    complete(stream->pending);
}
} // namespace

namespace weft::rt::cuda::emulator {
void defer(cudaStream_t stream, std::function<void()> complete) {
  std::erase_if(stream->pending, [](auto &p) { return p->done; });
  stream->pending.push_back(std::make_shared<Pending>(Pending{complete}));
}
void order(cudaStream_t stream) {
  if (stream)
    ::complete(stream->pending);
}
} // namespace weft::rt::cuda::emulator

using weft::rt::cuda::emulator::DeviceWork;
using weft::rt::cuda::emulator::order;

namespace {

/// An 80 GiB device, as an H100's.
constexpr size_t kDeviceBytes = size_t(80) << 30;
/// cudaMalloc's alignment.
constexpr size_t kAlignment = 256;

std::map<void *, size_t> &allocations() {
  static std::map<void *, size_t> sizes;
  return sizes;
}
size_t allocated = 0;

/// `bytes` (at least 1) rounded up to kAlignment.
size_t rounded(size_t bytes) {
  return (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment *
         kAlignment;
}

cudaError_t allocate(void **pointer, size_t bytes) {
  size_t size = rounded(bytes);
  if (allocated + size > kDeviceBytes)
    return cudaErrorMemoryAllocation;
  *pointer = std::aligned_alloc(kAlignment, size);
  if (!*pointer)
    return cudaErrorMemoryAllocation;
  // cudaMalloc's bytes are undefined: NaN in every float format here, so
  // a kernel that reads scratch bytes before writing them shows it.
  std::memset(*pointer, 0xFF, size);
  allocations()[*pointer] = size;
  allocated += size;
  return cudaSuccess;
}

cudaError_t release(void *pointer) {
  if (!pointer)
    return cudaSuccess;
  auto it = allocations().find(pointer);
  if (it == allocations().end())
    return cudaErrorInvalidValue;
  allocated -= it->second;
  allocations().erase(it);
  std::free(pointer);
  return cudaSuccess;
}

} // namespace

cudaError_t cudaGetDeviceCount(int *count) {
  const char *devices = std::getenv("WEFT_CUDA_EMULATOR_DEVICES");
  *count = devices ? std::max(std::atoi(devices), 1) : 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  int count = 0;
  cudaGetDeviceCount(&count);
  return device >= 0 && device < count ? cudaSuccess : cudaErrorInvalidDevice;
}
cudaError_t cudaGetLastError() {
  return weft::rt::cuda::emulator::takeLaunchError();
}
const char *cudaGetErrorName(cudaError_t error) {
  switch (error) {
  case cudaSuccess:
    return "cudaSuccess";
  case cudaErrorInvalidValue:
    return "cudaErrorInvalidValue";
  case cudaErrorMemoryAllocation:
    return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidConfiguration:
    return "cudaErrorInvalidConfiguration";
  case cudaErrorInvalidDevice:
    return "cudaErrorInvalidDevice";
  case cudaErrorInvalidPitchValue:
    return "cudaErrorInvalidPitchValue";
  default:
    return "cudaErrorUnknown";
  }
}
const char *cudaGetErrorString(cudaError_t error) {
  return error == cudaErrorInvalidConfiguration
             ? "invalid configuration argument (CUDA emulator)"
             : "CUDA emulator";
}

cudaError_t cudaMalloc(void **pointer, size_t bytes) {
  return allocate(pointer, bytes);
}
cudaError_t cudaMallocAsync(void **pointer, size_t bytes, cudaStream_t stream) {
  order(stream);
  return allocate(pointer, bytes);
}
// As CUDA's, a free synchronises the device first.
cudaError_t cudaFree(void *pointer) {
  if (pointer)
    synchronizeDevice();
  return release(pointer);
}
// Stream-ordered: the bytes go once the stream's work before is done.
cudaError_t cudaFreeAsync(void *pointer, cudaStream_t stream) {
  order(stream);
  return release(pointer);
}
cudaError_t cudaMemGetInfo(size_t *free, size_t *total) {
  *total = kDeviceBytes;
  *free = kDeviceBytes - allocated;
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **pointer, size_t bytes, unsigned int) {
  *pointer = std::aligned_alloc(kAlignment, rounded(bytes));
  return *pointer ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFreeHost(void *pointer) {
  synchronizeDevice();
  std::free(pointer);
  return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void **device, void *host, unsigned int) {
  *device = host; // mapped: the same bytes
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes,
                       cudaMemcpyKind) {
  DeviceWork work(DeviceWork::Copy);
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream) {
  order(stream);
  return cudaMemcpy(dst, src, bytes, kind);
}
// As CUDA, a row wider than either pitch is refused.
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dstPitch, const void *src,
                              size_t srcPitch, size_t width, size_t height,
                              cudaMemcpyKind, cudaStream_t stream) {
  DeviceWork work(DeviceWork::Copy, stream);
  if (width > dstPitch || width > srcPitch)
    return cudaErrorInvalidPitchValue;
  for (size_t row = 0; row < height; ++row)
    std::memmove(static_cast<char *>(dst) + row * dstPitch,
                 static_cast<const char *>(src) + row * srcPitch, width);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *pointer, int value, size_t bytes,
                            cudaStream_t stream) {
  DeviceWork work(DeviceWork::Copy, stream);
  std::memset(pointer, value, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int) {
  *stream = new CUstream_st;
  streams().push_back(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream)
    complete(stream->pending);
  std::erase(streams(), stream);
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (stream)
    complete(stream->pending);
  return cudaSuccess;
}
// Work after the wait may read what the event's work wrote: complete it.
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t event, unsigned int) {
  complete(event->pending);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  complete(event->pending);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) {
  *event = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int) {
  return cudaEventCreate(event);
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  event->at = std::chrono::steady_clock::now();
  if (stream)
    std::erase_if(stream->pending, [](auto &p) { return p->done; });
  event->pending = stream ? stream->pending : PendingList{};
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
                                 cudaEvent_t end) {
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return cudaSuccess;
}
