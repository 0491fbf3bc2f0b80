//===- Nccl.cpp - opening NCCL on first use -------------------------------===//

#include "Nccl.h"

#include "Dlopen.h"

namespace weft::rt::cuda {

const Nccl &Nccl::get() {
  static const Nccl table = [] {
    void *handle =
        openLibrary("libnccl.so." + std::to_string(NCCL_MAJOR), WEFT_NCCL_PATH,
                    "NCCL", "; --stage-transfers runs without it");
    Nccl t;
#define WEFT_NCCL_RESOLVE(name)                                                \
  t.name = symbol<decltype(&::name)>(handle, #name, "NCCL");
    WEFT_NCCL_FUNCTIONS(WEFT_NCCL_RESOLVE)
#undef WEFT_NCCL_RESOLVE
    return t;
  }();
  return table;
}

} // namespace weft::rt::cuda
