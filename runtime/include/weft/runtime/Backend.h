//===- Backend.h - what a device backend provides to the executor -*- C++
//-*-===//
//
// The executor is device-agnostic: it asks a Backend for the rank's arena,
// copies weights, constants and inputs into it, and launches each compute
// instruction on a stream. The CPU backend runs kernels synchronously on the
// calling thread with OpenBLAS GEMM; a CUDA backend implements the same
// interface with cuBLAS, a compute stream and copy streams.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKEND_H
#define WEFT_RUNTIME_BACKEND_H

#include "weft/runtime/Tensor.h"

#include <memory>
#include <string>

namespace weft::rt {

struct KernelCall;

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  /// Allocates `bytes` of device memory aligned to 64 bytes; throws Error
  /// when the device cannot hold it.
  virtual void *allocateArena(int64_t bytes) = 0;
  virtual void freeArena(void *arena) = 0;
  /// Host -> device and device -> host copies (bytes).
  virtual void upload(void *device, const void *host, int64_t bytes) = 0;
  virtual void download(void *host, const void *device, int64_t bytes) = 0;

  /// True when `kernel` is implemented.
  virtual bool hasKernel(const std::string &kernel) const = 0;
  /// Enqueues one kernel on the compute stream.
  virtual void launch(const KernelCall &call) = 0;
  /// Blocks until every enqueued kernel and copy has finished.
  virtual void synchronize() = 0;
  /// Host threads the backend's math library may use (BLAS threads).
  virtual void setThreads(int threads) = 0;
};

/// The reference backend: host memory, OpenBLAS, synchronous execution.
std::unique_ptr<Backend> createCpuBackend();

/// The CUDA backend (runtime/backends/cuda; built when WEFT_ENABLE_CUDA,
/// which defines WEFT_HAVE_CUDA) on GPU `localRank` modulo the GPUs
/// visible. Throws Error naming --device cuda when there is none. It
/// implements no kernel yet (issue 15): device memory, copy and compute
/// streams only.
std::unique_ptr<Backend> createCudaBackend(int localRank);

} // namespace weft::rt

#endif // WEFT_RUNTIME_BACKEND_H
