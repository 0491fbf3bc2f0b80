//===- Backend.cpp - the device interface's default group launch ----------===//

#include "weft/runtime/Backend.h"

#include "../kernels/Kernel.h"

namespace weft::rt {

// A backend without multi-tensor kernels launches a group one by one.
void Backend::launchGroup(const std::vector<KernelCall> &calls) {
  for (const KernelCall &call : calls)
    launch(call);
}

} // namespace weft::rt
