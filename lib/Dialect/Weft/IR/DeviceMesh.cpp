//===- DeviceMesh.cpp - weft's device mesh in the IR ----------------------===//

#include "weft/Dialect/Weft/IR/DeviceMesh.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;

namespace weft {

int64_t DeviceMesh::size() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

int64_t DeviceMesh::sizeOf(StringRef name) const {
  for (auto [axis, size] : llvm::zip(axes, sizes))
    if (axis == name)
      return size;
  return 1;
}

int64_t DeviceMesh::axisIndex(StringRef name) const {
  auto it = llvm::find(axes, name);
  return it == axes.end() ? -1 : it - axes.begin();
}

SmallVector<int64_t> DeviceMesh::coords(int64_t rank) const {
  SmallVector<int64_t> out(sizes.size());
  for (int64_t d = sizes.size() - 1; d >= 0; --d) {
    out[d] = rank % sizes[d];
    rank /= sizes[d];
  }
  return out;
}

int64_t DeviceMesh::rank(ArrayRef<int64_t> coords) const {
  int64_t r = 0;
  for (auto [c, size] : llvm::zip(coords, sizes))
    r = r * size + c;
  return r;
}

FailureOr<std::optional<DeviceMesh>> getDeviceMesh(ModuleOp module,
                                                   StringRef symbol) {
  auto grid = module.lookupSymbol<shard::GridOp>(symbol);
  if (!grid)
    return std::optional<DeviceMesh>();
  auto names = grid->getAttrOfType<ArrayAttr>(kMeshAxesAttr);
  ArrayRef<int64_t> shape = grid.getShape();
  if (!names || names.size() != shape.size() ||
      !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
    return grid.emitError("the device mesh needs '")
           << kMeshAxesAttr << "': one axis name per dim of its shape";
  DeviceMesh mesh;
  for (auto [name, size] : llvm::zip(names, shape)) {
    if (size < 1)
      return grid.emitError("the device mesh needs static, positive axis "
                            "sizes, axis '")
             << cast<StringAttr>(name).getValue() << "' has " << size;
    mesh.axes.push_back(cast<StringAttr>(name).str());
    mesh.sizes.push_back(size);
  }
  return std::optional<DeviceMesh>(mesh);
}

bool onZeroMesh(Operation *op) {
  auto grid = op->getAttrOfType<FlatSymbolRefAttr>("grid");
  return grid && grid.getValue() == kZeroMeshSymbol;
}

shard::GridOp createDeviceMesh(ModuleOp module, const DeviceMesh &mesh,
                               StringRef symbol) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto grid = shard::GridOp::create(b, module.getLoc(), symbol,
                                    ArrayRef<int64_t>(mesh.sizes));
  SmallVector<Attribute> names;
  for (const std::string &axis : mesh.axes)
    names.push_back(b.getStringAttr(axis));
  grid->setAttr(kMeshAxesAttr, b.getArrayAttr(names));
  return grid;
}

} // namespace weft
