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

#include "weft/ops/OpRecord.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"

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

/// inferKernelTypes<OpT>'s work apart from the op class: `inherent` are
/// the op's properties' attributes in ODS order (null where unset, less
/// operandSegmentSizes), `named` its discardable ones; `properties` builds
/// the properties' dictionary, asked only when the memo misses.
mlir::LogicalResult inferKernelTypesByProperties(
    mlir::MLIRContext *ctx, std::optional<mlir::Location> loc,
    mlir::TypeID opClass, const ops::OpRecord &record,
    llvm::ArrayRef<mlir::Attribute> inherent, mlir::DictionaryAttr named,
    llvm::ArrayRef<mlir::NamedAttribute> extra, mlir::ValueRange operands,
    llvm::function_ref<mlir::Attribute()> properties,
    llvm::SmallVectorImpl<mlir::Type> &types);

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
  llvm::SmallVector<mlir::Attribute, 8> inherent;
  for (llvm::StringRef attrName : OpT::getAttributeNames())
    if (attrName != "operandSegmentSizes")
      inherent.push_back(
          OpT::getInherentAttr(ctx, properties, attrName).value_or(nullptr));
  static const ops::OpRecord *record =
      ops::findOpRecord(name.stripDialect().str());
  return inferKernelTypesByProperties(
      ctx, loc, mlir::TypeID::get<OpT>(), *record, inherent,
      adaptor.getAttributes(), extra, adaptor.getOperands(),
      [&] { return OpT::getPropertiesAsAttr(ctx, properties); }, types);
}

/// Fails, naming weft-run's message, when `op` lowers to a kernel and its
/// result types are not those the kernel's rule gives for its operands and
/// attributes, or the rule refuses them. Succeeds for other ops.
mlir::LogicalResult verifyKernelContract(mlir::Operation *op);

} // namespace weft

#endif // WEFT_DIALECT_WEFT_IR_KERNELCONTRACT_H
