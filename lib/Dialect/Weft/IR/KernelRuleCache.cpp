//===- KernelRuleCache.cpp - kernel rule results, memoised ----------------===//

#include "weft/Dialect/Weft/IR/KernelRuleCache.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <mutex>

using namespace mlir;

weft::KernelRuleCache::Key weft::KernelRuleCache::key(Asker asker,
                                                      const void *op,
                                                      DictionaryAttr attrs,
                                                      TypeRange operands) {
  Key key{reinterpret_cast<const void *>(static_cast<uintptr_t>(asker)), op};
  key.reserve(4 + 2 * attrs.size() + operands.size());
  if (attrs)
    appendNamed(key, attrs.getValue());
  // No attribute's name is null: the operands start after it.
  key.push_back(nullptr);
  for (Type type : operands)
    key.push_back(type.getAsOpaquePointer());
  return key;
}

void weft::KernelRuleCache::appendNamed(Key &key,
                                        llvm::ArrayRef<NamedAttribute> attrs) {
  for (NamedAttribute attr : attrs) {
    if (isBookkeepingAttribute(attr.getName().getValue()))
      continue;
    key.push_back(attr.getName().getAsOpaquePointer());
    key.push_back(attr.getValue().getAsOpaquePointer());
  }
}

std::optional<llvm::SmallVector<Type, 2>>
weft::KernelRuleCache::lookup(const Key &key) const {
  std::shared_lock lock(mutex);
  auto it = results.find(key);
  if (it == results.end())
    return std::nullopt;
  return it->second;
}

void weft::KernelRuleCache::insert(Key key, TypeRange types) {
  std::unique_lock lock(mutex);
  results.try_emplace(std::move(key), types.begin(), types.end());
}
