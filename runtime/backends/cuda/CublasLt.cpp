//===- CublasLt.cpp - opening cuBLASLt on first use -----------------------===//

#include "CublasLt.h"

#include "weft/runtime/Tensor.h"

#include <dlfcn.h>

#include <string>

namespace weft::rt::cuda {

namespace {
/// The soname first (the loader's paths, LD_LIBRARY_PATH), then the
/// toolkit's library directory the build found (WEFT_CUBLASLT_PATH).
void *open() {
  std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  if (void *handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL))
    return handle;
  std::string first = dlerror();
  if (void *handle = dlopen(WEFT_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL))
    return handle;
  throw Error("--device cuda: cannot open cuBLASLt (" + first + "; " +
              dlerror() + ")");
}
} // namespace

const CublasLt &CublasLt::get() {
  static const CublasLt table = [] {
    void *handle = open();
    CublasLt t;
#define WEFT_CUBLASLT_RESOLVE(name)                                            \
  t.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));          \
  if (!t.name)                                                                 \
    throw Error("--device cuda: cuBLASLt lacks " #name);
    WEFT_CUBLASLT_FUNCTIONS(WEFT_CUBLASLT_RESOLVE)
#undef WEFT_CUBLASLT_RESOLVE
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
