//===- ConstantData.cpp - how a plan writes a constant's bytes ------------===//

#include "ConstantData.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Base64.h"
#include "llvm/Support/SHA256.h"

using namespace mlir;

namespace {

/// Raw little-endian bytes of a constant (bool: one byte per element).
std::string constantBytes(DenseElementsAttr value) {
  auto type = cast<ShapedType>(value.getType());
  int64_t width = (type.getElementTypeBitWidth() + 7) / 8;
  std::string bytes;
  bytes.reserve(type.getNumElements() * width);
  auto append = [&](const llvm::APInt &bits) {
    for (int64_t b = 0; b < width; ++b)
      bytes.push_back(static_cast<char>(bits.extractBitsAsZExtValue(8, 8 * b)));
  };
  if (isa<FloatType>(type.getElementType())) {
    for (const llvm::APFloat &f : value.getValues<llvm::APFloat>())
      append(f.bitcastToAPInt());
  } else if (type.getElementTypeBitWidth() == 1) {
    for (bool b : value.getValues<bool>())
      bytes.push_back(b ? 1 : 0);
  } else {
    for (const llvm::APInt &i : value.getValues<llvm::APInt>())
      append(i);
  }
  return bytes;
}

} // namespace

nlohmann::json weft::constantEntry(int64_t buffer, DenseElementsAttr value,
                                   std::map<std::string, std::string> &shared) {
  std::string bytes = constantBytes(value);
  nlohmann::json entry = {{"buffer", buffer}};
  if (bytes.size() < kSharedConstantBytes) {
    entry["data"] = llvm::encodeBase64(bytes);
    return entry;
  }
  std::string key =
      llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes)),
                  /*LowerCase=*/true);
  if (!shared.count(key))
    shared.emplace(key, llvm::encodeBase64(bytes));
  entry["data_sha256"] = key;
  return entry;
}
