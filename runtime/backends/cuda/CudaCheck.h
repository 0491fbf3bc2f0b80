//===- CudaCheck.h - CUDA errors as weft::rt::Error -------------*- C++ -*-===//
//
// WEFT_CUDA_CHECK(call) throws Error("file:line: call: <CUDA's error name
// and string>") when a CUDA runtime call fails, so a failing call names
// where it was made and what CUDA said, and weft-run prints it as its one
// line; WEFT_CUBLAS_CHECK and WEFT_NCCL_CHECK do the same for cuBLAS(Lt)
// status codes and NCCL results (NcclCheck.h: only the communicator opens
// NCCL).
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_CUDACHECK_H
#define WEFT_RUNTIME_BACKENDS_CUDA_CUDACHECK_H

#include "weft/runtime/Tensor.h"

#include "CublasLt.h"

#include <cuda_runtime_api.h>

#include <string>

namespace weft::rt {

/// Throws Error("file:line: what: message"): a GPU library call `what`
/// failed with the library's own `message`.
[[noreturn]] inline void libraryError(const char *file, int line,
                                      const char *what,
                                      const std::string &message) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + what +
              ": " + message);
}

/// Throws Error naming `file`:`line`, the call `what` and CUDA's error
/// when `status` is not cudaSuccess.
inline void cudaCheck(cudaError_t status, const char *what, const char *file,
                      int line) {
  if (status != cudaSuccess)
    libraryError(file, line, what,
                 std::string(cudaGetErrorName(status)) + " (" +
                     cudaGetErrorString(status) + ")");
}

/// The same for a cuBLAS or cuBLASLt status.
inline void cublasCheck(cublasStatus_t status, const char *what,
                        const char *file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  const cuda::CublasLt &lt = cuda::CublasLt::get();
  libraryError(file, line, what,
               std::string(lt.cublasLtGetStatusName(status)) + " (" +
                   lt.cublasLtGetStatusString(status) + ")");
}

} // namespace weft::rt

#define WEFT_CUDA_CHECK(call)                                                  \
  ::weft::rt::cudaCheck((call), #call, __FILE__, __LINE__)
#define WEFT_CUBLAS_CHECK(call)                                                \
  ::weft::rt::cublasCheck((call), #call, __FILE__, __LINE__)

#endif // WEFT_RUNTIME_BACKENDS_CUDA_CUDACHECK_H
