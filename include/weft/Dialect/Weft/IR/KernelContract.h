//===- KernelContract.h - a kernel op against weft-run's rule ---*- C++ -*-===//
//
// The contract between a weft op that lowers to a kernel (Ops.def's Lowering
// Kernel) and weft-run: the op's result types are what the kernel's
// specification entry (runtime/lib/specs) gives for its operand types and
// attributes. The rule is written once, in the entry; the dialect calls it
// through weft/ops/OpCheck.h to verify every kernel op (the KernelContract
// trait, on every weft op) and to infer result types (inferKernelTypes), so
// a pass cannot build IR that verifies and a plan that weft-run refuses.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_DIALECT_WEFT_IR_KERNELCONTRACT_H
#define WEFT_DIALECT_WEFT_IR_KERNELCONTRACT_H

#include "weft/Dialect/Weft/IR/KernelRuleCache.h"
#include "weft/ops/OpRecord.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace weft {

/// The plan's name for an element type ("f32", "bf16", "i64", "bool", ...);
/// empty for types a plan cannot hold (docs/plan-format.md, "Buffers").
std::string dtypeName(mlir::Type elementType);

/// An attribute as the plan writes it: arrays as lists, numbers, booleans
/// (a unit attribute is true), strings, types as dtype names; null JSON for
/// an attribute the plan cannot encode.
nlohmann::json attributeJSON(mlir::Attribute attr);

/// The vocabulary rows (classes) of the shard a vocab-parallel op's rank
/// holds; -1 for any other op.
int64_t vocabShardRows(mlir::Operation &op);

/// The attributes of `op`'s plan instruction that do not depend on the rank:
/// its attributes with their ODS defaults, less the compiler's bookkeeping
/// (`weft.*`, operandSegmentSizes, a vocab op's grid), plus what its operands
/// say (softmax_cross_entropy_grad's `log_sum_exp`; a vocab op's `rows`,
/// and `start` 0, which plan emission sets per rank). Plan emission adds
/// the rank's `start`, dropout's `rng_id` and its shard. Nullopt, with the
/// attribute's name in `*unencodable`, when an attribute has no plan form.
std::optional<nlohmann::json>
kernelAttributes(mlir::Operation &op, std::string *unencodable = nullptr);

/// The result types kernel op `op` has for `operands` and `attrs` (its
/// inherent attributes with their defaults, and discardable ones) by its
/// kernel's rule; fails with weft-run's message at `loc`. For
/// inferReturnTypes of the ops whose ODS base is Weft_KernelTypedOp, and of
/// attention and softmax_cross_entropy_grad.
mlir::LogicalResult inferKernelTypes(ops::Op op, mlir::MLIRContext *ctx,
                                     std::optional<mlir::Location> loc,
                                     mlir::ValueRange operands,
                                     mlir::DictionaryAttr attrs,
                                     llvm::SmallVectorImpl<mlir::Type> &types);

/// The memoised result types for a key built by the caller (nullopt when
/// not yet known, or before the dialect loads), and the record of a result.
std::optional<llvm::SmallVector<mlir::Type, 2>>
knownKernelTypes(mlir::MLIRContext *ctx, const KernelRuleCache::Key &key);
void rememberKernelTypes(mlir::MLIRContext *ctx, KernelRuleCache::Key key,
                         mlir::TypeRange types);

/// The same from an ODS adaptor: `OpT`'s properties (defaults filled in),
/// discardable attributes and `extra`, plan attributes an operand implies
/// (softmax_cross_entropy_grad's `log_sum_exp`).
template <typename OpT>
mlir::LogicalResult
inferKernelTypes(mlir::MLIRContext *ctx, std::optional<mlir::Location> loc,
                 typename OpT::Adaptor adaptor,
                 llvm::SmallVectorImpl<mlir::Type> &types,
                 llvm::ArrayRef<mlir::NamedAttribute> extra = {}) {
  typename OpT::Properties properties = adaptor.getProperties();
  mlir::OperationName name(OpT::getOperationName(), ctx);
  OpT::populateDefaultProperties(name, properties);
  // Keyed by the properties' attributes in ODS order, then the dictionary's
  // and `extra`'s: the verifier infers every op's types again after each
  // pass, and a dictionary of the properties, uniqued under the context's
  // lock, was most of that time at GPT-3 scale. operandSegmentSizes is no
  // input of the rule (kernelAttributes drops it).
  KernelRuleCache::Key key{
      reinterpret_cast<const void *>(static_cast<uintptr_t>(
          KernelRuleCache::Asker::InferenceByProperties)),
      mlir::TypeID::get<OpT>().getAsOpaquePointer()};
  for (llvm::StringRef attrName : OpT::getAttributeNames()) {
    if (attrName == "operandSegmentSizes")
      continue;
    std::optional<mlir::Attribute> value =
        OpT::getInherentAttr(ctx, properties, attrName);
    key.push_back(value && *value ? value->getAsOpaquePointer() : nullptr);
  }
  if (mlir::DictionaryAttr named = adaptor.getAttributes())
    KernelRuleCache::appendNamed(key, named.getValue());
  KernelRuleCache::appendNamed(key, extra);
  key.push_back(nullptr);
  for (mlir::Type type : adaptor.getOperands().getTypes())
    key.push_back(type.getAsOpaquePointer());
  if (auto known = knownKernelTypes(ctx, key)) {
    types.append(known->begin(), known->end());
    return mlir::success();
  }

  mlir::NamedAttrList attrs(adaptor.getAttributes());
  // A generic build may pass the inherent attributes in the dictionary too:
  // set, not append, so each name stays unique.
  if (auto inherent = llvm::dyn_cast_or_null<mlir::DictionaryAttr>(
          OpT::getPropertiesAsAttr(ctx, properties)))
    for (mlir::NamedAttribute a : inherent)
      attrs.set(a.getName(), a.getValue());
  for (mlir::NamedAttribute a : extra)
    attrs.set(a.getName(), a.getValue());
  static const ops::OpRecord *record =
      ops::findOpRecord(name.stripDialect().str());
  size_t before = types.size();
  if (mlir::failed(inferKernelTypes(record->op, ctx, loc, adaptor.getOperands(),
                                    attrs.getDictionary(ctx), types)))
    return mlir::failure();
  rememberKernelTypes(ctx, std::move(key),
                      llvm::ArrayRef<mlir::Type>(types).drop_front(before));
  return mlir::success();
}

/// Fails, naming weft-run's message, when `op` lowers to a kernel and its
/// result types are not those the kernel's rule gives for its operands and
/// attributes, or the rule refuses them. Succeeds for other ops.
mlir::LogicalResult verifyKernelContract(mlir::Operation *op);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_KERNELCONTRACT_H
