//===- Backend.h - what a device backend provides to the executor -*- C++
//-*-===//
//
// The executor is device-agnostic: it asks a Backend for the rank's arena,
// copies weights, constants and inputs into it, and launches each compute
// instruction on a stream. The interface has the shape of IREE's HAL:
// a device with memory (the arena, pinned host staging), streams (compute;
// comm for transfers and collectives, torchgpipe's copy streams) and
// events that order one stream after another's work and time it. The CPU
// backend runs kernels synchronously on the calling thread with OpenBLAS
// (its events are host timestamps, its waits no-ops); the CUDA backend
// enqueues on CUDA streams with cuBLASLt and weft's kernels.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKEND_H
#define WEFT_RUNTIME_BACKEND_H

#include "weft/runtime/Tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace weft::rt {

struct KernelCall;

/// A marker in a stream's work (HAL's event, cudaEvent_t): recorded after
/// the work enqueued on the stream so far. Another stream waits for it;
/// two recorded events time the work between them.
class Event {
public:
  virtual ~Event() = default;
};

/// A backend's queues: kernels run on Compute, transfers and collectives
/// are posted on Comm, so they overlap the kernels that do not need them.
enum class Stream { Compute, Comm };

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
  /// False for a dtype no kernel takes (the GPU's f64): a plan with such
  /// an operand is refused before it runs.
  virtual bool computes(DType dtype) const { return true; }
  /// Enqueues one kernel on the compute stream.
  virtual void launch(const KernelCall &call) = 0;
  /// Whether a run of consecutive instructions of `kernel` may be given to
  /// launchGroup: a multi-tensor kernel (Apex's multi_tensor_apply, torch's
  /// fused AdamW) launches once for the run, not once per tensor.
  virtual bool launchesGrouped(const std::string &kernel) const {
    return false;
  }
  /// Enqueues `calls`, all of one kernel launchesGrouped() admits, with the
  /// results launch() gives them one by one in order (by default, it).
  virtual void launchGroup(const std::vector<KernelCall> &calls);
  /// Blocks until every enqueued kernel and copy has finished.
  virtual void synchronize() = 0;
  /// Host threads the backend's math library may use (BLAS threads).
  virtual void setThreads(int threads) = 0;

  /// A new event, not yet recorded.
  virtual std::unique_ptr<Event> createEvent() = 0;
  /// Marks the work enqueued on `stream` so far (a re-record moves it).
  virtual void record(Event &event, Stream stream) = 0;
  /// Work enqueued on `stream` after this call starts once `event`'s work
  /// has finished; the host does not block.
  virtual void wait(Stream stream, const Event &event) = 0;
  /// Microseconds from `from` to `to`, both recorded and finished (after
  /// synchronize()): device time on a GPU, host time on the CPU.
  virtual double elapsedUs(const Event &from, const Event &to) = 0;

  /// The native queue behind `stream` (cudaStream_t), for a communicator
  /// that enqueues on it (NCCL); null where there is none (the CPU).
  virtual void *nativeStream(Stream stream) { return nullptr; }

  /// Device bytes beside the plan's arena: the libraries' workspaces
  /// (cuBLASLt's) and the kernels' scratch at its high-water mark
  /// (cuDNN's workspaces, sort buffers, partial sums). 0 on the CPU.
  virtual int64_t workspaceBytes() const { return 0; }
  /// Device memory in use by this process since the backend was made
  /// (cudaMemGetInfo's difference: the arena, the workspaces and the
  /// allocators' rounding), or -1 where it cannot be measured (the CPU).
  virtual int64_t deviceBytesInUse() const { return -1; }

  /// Host memory the device copies to and from directly (pinned: the
  /// staging of MPI transfers); 64-byte aligned. Throws Error when none is
  /// left.
  virtual void *allocateHost(int64_t bytes) = 0;
  virtual void freeHost(void *host) = 0;
};

/// The reference backend: host memory, OpenBLAS, synchronous execution.
std::unique_ptr<Backend> createCpuBackend();

/// The CUDA backend (runtime/backends/cuda; built when WEFT_ENABLE_CUDA,
/// which defines WEFT_HAVE_CUDA) on GPU `localRank` modulo the GPUs
/// visible. With `allowTf32`, f32 GEMMs and convolutions may run on TF32
/// tensor cores (NVIDIA's TF32: inputs rounded to 10 mantissa bits, f32
/// accumulation; torch's backends.cuda.matmul.allow_tf32 and
/// backends.cudnn.allow_tf32); without, they run f32 FMA math. Throws
/// Error naming --device cuda when there is no GPU.
std::unique_ptr<Backend> createCudaBackend(int localRank,
                                           bool allowTf32 = false);

class Communicator;
/// The plan's collectives over NCCL between ranks on distinct GPUs
/// (runtime/backends/cuda/NcclCommunicator.cpp; built with
/// WEFT_HAVE_NCCL): a communicator per mesh axis by ncclCommSplit,
/// bootstrapped over `host`, each on its own stream after `backend`'s
/// comm stream; point-to-point transfers and everything else go to `host`
/// (the staged communicator). Throws Error naming --device cuda when NCCL
/// cannot be opened or `backend` is not the CUDA backend.
std::unique_ptr<Communicator> createNcclCommunicator(Communicator &host,
                                                     Backend &backend);

} // namespace weft::rt

#endif // WEFT_RUNTIME_BACKEND_H
