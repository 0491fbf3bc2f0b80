//===- NcclCheck.h - NCCL results as weft::rt::Error ------------*- C++ -*-===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_NCCLCHECK_H
#define WEFT_RUNTIME_BACKENDS_CUDA_NCCLCHECK_H

#include "CudaCheck.h"
#include "Nccl.h"

#include <string>

namespace weft::rt {

/// Throws Error naming `file`:`line`, the call `what` and NCCL's error
/// string when `result` is not ncclSuccess.
inline void ncclCheck(ncclResult_t result, const char *what, const char *file,
                      int line) {
  if (result != ncclSuccess)
    libraryError(file, line, what,
                 cuda::Nccl::get().ncclGetErrorString(result));
}

} // namespace weft::rt

#define WEFT_NCCL_CHECK(call)                                                  \
  ::weft::rt::ncclCheck((call), #call, __FILE__, __LINE__)

#endif // WEFT_RUNTIME_BACKENDS_CUDA_NCCLCHECK_H
