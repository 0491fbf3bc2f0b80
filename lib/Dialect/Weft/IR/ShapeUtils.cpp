//===- ShapeUtils.cpp - shape and size helpers for weft ops ---------------===//

#include "weft/Dialect/Weft/IR/ShapeUtils.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace weft {

int64_t numElements(Type type) {
  return cast<ShapedType>(type).getNumElements();
}

int64_t byteSize(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped) // transfer requests and other non-data values
    return 0;
  int64_t bits = shaped.getElementTypeBitWidth();
  return shaped.getNumElements() * ((bits + 7) / 8);
}

std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the trailing dimension; missing leading dims act as 1.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    result[i] = da == 1 ? db : da;
  }
  return result;
}

LogicalResult verifyAxes(Operation *op, ArrayRef<int64_t> axes, int64_t rank) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank)
      return op->emitOpError("axis ")
             << axes[i] << " out of range [0, " << rank << ")";
    if (i > 0 && axes[i] <= axes[i - 1])
      return op->emitOpError("axes must be sorted and unique");
  }
  return success();
}

} // namespace weft
