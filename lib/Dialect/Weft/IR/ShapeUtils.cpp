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

LogicalResult inferBroadcastType(std::optional<Location> loc, Type lhs,
                                 Type rhs, Type elementType,
                                 SmallVectorImpl<Type> &out) {
  auto lhsType = cast<RankedTensorType>(lhs);
  auto rhsType = cast<RankedTensorType>(rhs);
  auto shape = broadcastShapes(lhsType.getShape(), rhsType.getShape());
  if (!shape)
    return emitOptionalError(loc, "operand shapes ", lhsType, " and ", rhsType,
                             " do not broadcast");
  out.push_back(RankedTensorType::get(
      *shape, elementType ? elementType : lhsType.getElementType()));
  return success();
}

LogicalResult inferReduceType(std::optional<Location> loc, Type input,
                              ArrayRef<int64_t> axes, bool keepdims,
                              SmallVectorImpl<Type> &out) {
  auto type = cast<RankedTensorType>(input);
  SmallVector<int64_t> shape;
  for (int64_t i = 0, e = type.getRank(); i < e; ++i) {
    if (!llvm::is_contained(axes, i))
      shape.push_back(type.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  for (int64_t axis : axes)
    if (axis < 0 || axis >= type.getRank())
      return emitOptionalError(loc, "reduction axis ", axis,
                               " out of range for rank ", type.getRank());
  out.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
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

int64_t windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  int64_t span = in + padBegin + padEnd - ((kernel - 1) * dilation + 1);
  if (span < 0)
    return 0;
  int64_t steps = ceilMode ? (span + stride - 1) / stride : span / stride;
  return steps + 1;
}

} // namespace weft
