//===- CublasLt.cpp - opening cuBLASLt on first use -----------------------===//

#include "CublasLt.h"

#include "Dlopen.h"

namespace weft::rt::cuda {

const CublasLt &CublasLt::get() {
  static const CublasLt table = [] {
    void *handle =
        openLibrary("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
                    WEFT_CUBLASLT_PATH, "cuBLASLt");
    CublasLt t;
#define WEFT_CUBLASLT_RESOLVE(name)                                            \
  t.name = symbol<decltype(&::name)>(handle, #name, "cuBLASLt");
    WEFT_CUBLASLT_FUNCTIONS(WEFT_CUBLASLT_RESOLVE)
#undef WEFT_CUBLASLT_RESOLVE
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
