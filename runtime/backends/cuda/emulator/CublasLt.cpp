//===- CublasLt.cpp - the CUDA emulator has no cuBLASLt -------------------===//
//
// cuBLASLt's GEMMs are not emulated: the emulator's kernel table has no
// GEMM kernels (matmul, gemm, wgrad_bias, the GELU epilogues), and the
// backend's handle is a null one, made and destroyed without the library.
//
//===----------------------------------------------------------------------===//

#include "../CublasLt.h"
#include "../CudaKernels.h"

namespace weft::rt::cuda {

const CublasLt &CublasLt::get() {
  static const CublasLt table = [] {
    CublasLt t;
    t.cublasLtCreate = [](cublasLtHandle_t *handle) -> cublasStatus_t {
      *handle = nullptr;
      return CUBLAS_STATUS_SUCCESS;
    };
    t.cublasLtDestroy = [](cublasLtHandle_t) -> cublasStatus_t {
      return CUBLAS_STATUS_SUCCESS;
    };
    t.cublasLtGetStatusName = [](cublasStatus_t) -> const char * {
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    };
    t.cublasLtGetStatusString = [](cublasStatus_t) -> const char * {
      return "cuBLASLt is not emulated";
    };
    return t;
  }();
  return table;
}

void registerGemmKernels(KernelTable &) {}

} // namespace weft::rt::cuda
