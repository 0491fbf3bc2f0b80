//===- KernelRuleCache.h - kernel rule results, memoised --------*- C++ -*-===//
//
// The result types a kernel's rule (KernelContract.h) gave, by what the rule
// reads: the op, its attributes less the compiler's `weft.*` bookkeeping
// (the task, which differs per micro-batch, stage and kind, and which the rule
// never reads) and its operand types. All of them are uniqued in the
// context, so a key is their pointers. A compile at scale applies the rule
// to a few hundred distinct keys hundreds of thousands of times: at every
// op's build and at every verification (after each pass), once per
// micro-batch copy of each layer of each stage. The WeftDialect holds one
// per context.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_KERNELRULECACHE_H
#define WEFT_DIALECT_WEFT_IR_KERNELRULECACHE_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <shared_mutex>
#include <unordered_map>

namespace weft {

/// Whether attribute `name` is the compiler's bookkeeping (`weft.*`: the
/// task, buckets, shards), which no kernel's rule or plan
/// attribute reads.
inline bool isBookkeepingAttribute(llvm::StringRef name) {
  return name.starts_with("weft.");
}

/// Thread-safe (passes run on functions in parallel). Only rules that
/// succeeded are kept: a refusal is recomputed, so that its message is
/// emitted where it arises.
class KernelRuleCache {
public:
  /// Who asks: inference at build (ODS properties, defaults filled in) and
  /// the verifier (the op's attribute dictionary) see an op's attributes
  /// differently, so their keys are kept apart.
  /// InferenceByProperties: inferKernelTypes<OpT>'s own key (the op's
  /// TypeID, its properties' attributes by ODS position, then named ones).
  enum class Asker { Inference, Verifier, InferenceByProperties };
  /// Inline for an op of a few attributes and operands: the verifier
  /// makes one per op it checks.
  using Key = llvm::SmallVector<const void *, 16>;

  /// The key of applying `op`'s rule (`op`: an OperationName's or an
  /// ops::Op's opaque identity) to `attrs` and `operands`.
  static Key key(Asker asker, const void *op, mlir::DictionaryAttr attrs,
                 mlir::TypeRange operands);

  /// Appends each (name, value) of `attrs` but the bookkeeping ones.
  static void appendNamed(Key &key, llvm::ArrayRef<mlir::NamedAttribute> attrs);

  /// The result types the rule gave for `key`; nullopt if not yet applied.
  std::optional<llvm::SmallVector<mlir::Type, 2>> lookup(const Key &key) const;
  void insert(Key key, mlir::TypeRange results);

private:
  struct Hash {
    size_t operator()(const Key &key) const {
      return llvm::hash_combine_range(key.begin(), key.end());
    }
  };
  mutable std::shared_mutex mutex;
  std::unordered_map<Key, llvm::SmallVector<mlir::Type, 2>, Hash> results;
};

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_KERNELRULECACHE_H
