//===- ConstantEvaluator.cpp - kernel ops on constants, by the CPU kernel -===//

#include "weft/Dialect/Weft/IR/ConstantEvaluator.h"

#include "weft/Dialect/Weft/IR/KernelContract.h"
#include "weft/Dialect/Weft/IR/OpRecords.h"
#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/runtime/Evaluate.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

namespace {

/// `attr`'s elements as the runtime lays them out: row-major, bool as one
/// byte per element (MLIR packs i1 as bits in its raw data).
std::optional<weft::rt::HostValue> hostValue(DenseElementsAttr attr) {
  auto type = cast<RankedTensorType>(attr.getType());
  Type element = type.getElementType();
  std::string dtype = weft::dtypeName(element);
  if (dtype.empty() || element.isF16() || element.isBF16())
    return std::nullopt;
  weft::rt::HostValue v{dtype, type.getShape().vec(), {}};
  int64_t n = type.getNumElements();
  if (element.isInteger(1)) {
    for (bool b : attr.getValues<bool>())
      v.bytes.push_back(b);
    return v;
  }
  int64_t width = element.getIntOrFloatBitWidth() / 8;
  v.bytes.resize(n * width);
  ArrayRef<char> raw = attr.getRawData();
  for (int64_t k = 0; k < n; ++k) // a splat stores one element
    std::copy_n(raw.data() + (attr.isSplat() ? 0 : k * width), width,
                v.bytes.data() + k * width);
  return v;
}

/// The runtime's `value` as an attribute of `type`.
DenseElementsAttr elementsAttr(const weft::rt::HostValue &value,
                               RankedTensorType type) {
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> bits(value.bytes.begin(), value.bytes.end());
    return DenseElementsAttr::get(type, ArrayRef<bool>(bits));
  }
  return DenseElementsAttr::getFromRawBuffer(
      type, ArrayRef<char>(value.bytes.data(), value.bytes.size()));
}

} // namespace

std::optional<SmallVector<DenseElementsAttr>>
weft::evaluateConstantOp(Operation *op, ArrayRef<DenseElementsAttr> operands,
                         int64_t maxElements, std::string *refusal) {
  const ops::OpRecord *record = opRecord(op);
  if (!record || op->getNumResults() == 0 ||
      operands.size() != op->getNumOperands())
    return std::nullopt;
  // A view (reshape) is its operand's elements under its result type: no
  // evaluation, so at any size (the importer folded constant reshapes
  // whole before it had an evaluator; weft-fuse-attention reads masks so).
  if (record->isView() && operands.size() == 1 && op->getNumResults() == 1)
    return SmallVector<DenseElementsAttr>{
        DenseElementsAttr(operands[0])
            .reshape(cast<ShapedType>(op->getResult(0).getType()))};
  if (!record->isKernel())
    return std::nullopt;
  std::vector<rt::HostValue> inputs;
  for (DenseElementsAttr attr : operands) {
    std::optional<rt::HostValue> value = hostValue(attr);
    if (!value)
      return std::nullopt;
    inputs.push_back(std::move(*value));
  }
  for (Type type : op->getResultTypes())
    if (cast<RankedTensorType>(type).getNumElements() > maxElements)
      return std::nullopt;
  std::optional<nlohmann::json> attrs = kernelAttributes(*op);
  if (!attrs)
    return std::nullopt;
  std::vector<rt::HostValue> outputs;
  std::string_view kernel = record->mnemonic;
  bool refused = false;
  std::string error = rt::evaluateKernel(kernel, inputs, *attrs, maxElements,
                                         &outputs, &refused);
  if (!error.empty()) {
    if (refused && refusal)
      *refusal = error;
    return std::nullopt;
  }
  SmallVector<DenseElementsAttr> results;
  for (auto [value, type] : llvm::zip(outputs, op->getResultTypes()))
    results.push_back(elementsAttr(value, cast<RankedTensorType>(type)));
  return results;
}
