//===- Nccl.h - NCCL, loaded with the first NCCL communicator ---*- C++ -*-===//
//
// As cuBLASLt (CublasLt.h): weft-run links no NCCL; the library is opened
// (dlopen) when ranks on distinct GPUs make their communicator, so CPU runs
// and single-GPU runs never map it.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_NCCL_H
#define WEFT_RUNTIME_BACKENDS_CUDA_NCCL_H

#include <nccl.h>

namespace weft::rt::cuda {

struct Nccl {
#define WEFT_NCCL_FUNCTIONS(X)                                                 \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclCommSplit)                                                             \
  X(ncclCommCount)                                                             \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclGetErrorString)                                                        \
  X(ncclAllReduce)                                                             \
  X(ncclAllGather)                                                             \
  X(ncclReduceScatter)                                                         \
  X(ncclSend)                                                                  \
  X(ncclRecv)
#define WEFT_NCCL_POINTER(name) decltype(&::name) name = nullptr;
  WEFT_NCCL_FUNCTIONS(WEFT_NCCL_POINTER)
#undef WEFT_NCCL_POINTER

  /// The library's functions, opened on the first call; throws Error
  /// naming the library and dlerror() when it or a function is missing.
  static const Nccl &get();
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_NCCL_H
