//===- Dlopen.h - opening a GPU library on first use ------------*- C++ -*-===//
//
// cuBLASLt and NCCL are not linked: weft-run opens them when a GPU run
// first needs them (CublasLt.h, Nccl.h), so CPU runs never map them.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_BACKENDS_CUDA_DLOPEN_H
#define WEFT_RUNTIME_BACKENDS_CUDA_DLOPEN_H

#include "weft/runtime/Tensor.h"

#include <dlfcn.h>

#include <string>

namespace weft::rt::cuda {

/// `soname` from the loader's paths (LD_LIBRARY_PATH), else `path` (the
/// library the build found). Throws Error naming `library`, both dlerror()
/// messages and `hint`.
inline void *openLibrary(const std::string &soname, const char *path,
                         const std::string &library,
                         const std::string &hint = "") {
  if (void *handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL))
    return handle;
  std::string first = dlerror();
  if (void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL))
    return handle;
  throw Error("--device cuda: cannot open " + library + " (" + first + "; " +
              dlerror() + ")" + hint);
}

/// The function `name` of an opened library, as `Fn`; throws Error naming
/// the library when it lacks it.
template <typename Fn>
Fn symbol(void *handle, const char *name, const std::string &library) {
  if (void *address = dlsym(handle, name))
    return reinterpret_cast<Fn>(address);
  throw Error("--device cuda: " + library + " lacks " + name);
}

} // namespace weft::rt::cuda

#endif // WEFT_RUNTIME_BACKENDS_CUDA_DLOPEN_H
