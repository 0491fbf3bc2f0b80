//===- CreateDeviceMesh.cpp - weft-create-device-mesh ---------------------===//

#include "weft/Dialect/Weft/IR/DeviceMesh.h"
#include "weft/Transforms/Passes.h"

namespace weft {
#define GEN_PASS_DEF_CREATEDEVICEMESH
#include "weft/Transforms/Passes.h.inc"
} // namespace weft

using namespace mlir;

namespace {
struct CreateDeviceMesh
    : weft::impl::CreateDeviceMeshBase<CreateDeviceMesh> {
  using CreateDeviceMeshBase::CreateDeviceMeshBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    weft::DeviceMesh mesh = weft::DeviceMesh::standard(pipeline, data, tensor);
    for (auto [axis, size] : llvm::zip(mesh.axes, mesh.sizes))
      if (size < 1) {
        module.emitError("weft-create-device-mesh: ")
            << axis << " size " << size << " must be at least 1";
        return signalPassFailure();
      }
    if (dataShard < 0 || (dataShard > 0 && data % dataShard)) {
      module.emitError("weft-create-device-mesh: a ZeRO group of ")
          << int64_t(dataShard) << " does not divide the data axis ("
          << int64_t(data) << ")";
      return signalPassFailure();
    }
    bool groups = dataShard > 1 && dataShard < data;
    if (groups && !module.lookupSymbol(weft::kZeroMeshSymbol))
      weft::createDeviceMesh(
          module,
          weft::DeviceMesh::zeroGroups(pipeline, data, dataShard, tensor),
          weft::kZeroMeshSymbol);
    FailureOr<std::optional<weft::DeviceMesh>> existing =
        weft::getDeviceMesh(module);
    if (failed(existing))
      return signalPassFailure();
    if (!*existing) {
      weft::createDeviceMesh(module, mesh);
      return;
    }
    if ((*existing)->axes != mesh.axes || (*existing)->sizes != mesh.sizes) {
      module.emitError("weft-create-device-mesh: the module's device mesh "
                       "differs from the requested ")
          << mesh.sizes[0] << "x" << mesh.sizes[1] << "x" << mesh.sizes[2]
          << " (pipeline x data x tensor)";
      signalPassFailure();
    }
  }
};
} // namespace
