//===- CudnnLibrary.cpp - opening cuDNN on first use ----------------------===//

#include "Cudnn.h"

#include "Dlopen.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace weft::rt::cuda {

const Cudnn &Cudnn::get() {
  static const Cudnn table = [] {
    void *handle = openLibrary("libcudnn.so." + std::to_string(CUDNN_MAJOR),
                               WEFT_CUDNN_PATH, "cuDNN");
    Cudnn t;
    t.handle = handle;
#define WEFT_CUDNN_RESOLVE(name)                                               \
  t.name = symbol<decltype(&::name)>(handle, #name, "cuDNN");
    WEFT_CUDNN_FUNCTIONS(WEFT_CUDNN_RESOLVE)
#undef WEFT_CUDNN_RESOLVE
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
