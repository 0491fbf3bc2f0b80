//===- CublasLt.h - cuBLASLt, loaded with the first GPU backend -*- C++ -*-===//
//
// weft-run links no cuBLASLt: the library is opened (dlopen) when the first
// CUDA backend is made and its functions are called through this table. A
// run on the CPU then never maps it: linked, it made every weft-run process
// 226 MB resident at start-up instead of 18 MB and 0.1 s slower (measured
// on this machine, gpt f16 plan, one step), which multi-rank CPU runs and
// the test suite pay per process.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_CUBLASLT_H
#define WEFT_RUNTIME_BACKENDS_CUDA_CUBLASLT_H

#include <cublasLt.h>

namespace weft::rt::cuda {

struct CublasLt {
#define WEFT_CUBLASLT_FUNCTIONS(X)                                             \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmul)                                                            \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)
#define WEFT_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  WEFT_CUBLASLT_FUNCTIONS(WEFT_CUBLASLT_POINTER)
#undef WEFT_CUBLASLT_POINTER

  /// The library's functions, opened on the first call; throws Error
  /// naming the library and dlerror() when it or a function is missing.
  static const CublasLt &get();
};

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_CUBLASLT_H
