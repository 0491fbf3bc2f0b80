//===- KernelContract.cpp - a kernel op against weft-run's rule -----------===//

#include "weft/Dialect/Weft/IR/KernelContract.h"
#include "weft/Dialect/Weft/IR/KernelRuleCache.h"
#include "weft/Dialect/Weft/IR/OpRecords.h"

#include "weft/Dialect/Weft/IR/WeftOps.h"
#include "weft/ops/OpCheck.h"

using namespace mlir;
using json = nlohmann::json;
namespace ops = weft::ops;

std::string weft::dtypeName(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isF16())
    return "f16";
  if (t.isBF16())
    return "bf16";
  if (auto i = dyn_cast<IntegerType>(t)) {
    if (i.getWidth() == 1)
      return "bool";
    return (i.isUnsigned() ? "u" : "i") + std::to_string(i.getWidth());
  }
  return "";
}

json weft::attributeJSON(Attribute attr) {
  if (auto a = dyn_cast<DenseI64ArrayAttr>(attr))
    return json(a.asArrayRef().vec());
  if (auto a = dyn_cast<DenseF64ArrayAttr>(attr))
    return json(a.asArrayRef().vec());
  if (auto a = dyn_cast<BoolAttr>(attr))
    return a.getValue();
  if (isa<UnitAttr>(attr))
    return true;
  if (auto a = dyn_cast<IntegerAttr>(attr))
    return a.getInt();
  if (auto a = dyn_cast<FloatAttr>(attr))
    return a.getValueAsDouble();
  if (auto a = dyn_cast<StringAttr>(attr))
    return a.str();
  if (auto a = dyn_cast<TypeAttr>(attr))
    return dtypeName(a.getValue());
  return nullptr;
}

int64_t weft::vocabShardRows(Operation &op) {
  if (auto gather = dyn_cast<VocabParallelGatherOp>(op))
    return gather.getTable().getType().getDimSize(0);
  if (auto grad = dyn_cast<VocabParallelGatherGradOp>(op))
    return grad.getType().getDimSize(0);
  if (auto stats = dyn_cast<VocabParallelCrossEntropyStatsOp>(op))
    return stats.getScores().getType().getDimSize(1);
  if (auto grad = dyn_cast<VocabParallelCrossEntropyGradOp>(op))
    return grad.getType().getDimSize(1);
  return -1;
}

namespace {

/// `attrList` of the op `record` is (null: not a weft op) as the plan's
/// attributes (kernelAttributes' generic part).
std::optional<json> planAttributes(const ops::OpRecord *record,
                                   const NamedAttrList &attrList,
                                   std::string *unencodable) {
  json attrs = json::object();
  for (NamedAttribute attr : attrList) {
    if (weft::isBookkeepingAttribute(attr.getName().getValue()))
      continue;
    // Which optional operands are present: the input count says it.
    if (attr.getName() == "operandSegmentSizes")
      continue;
    // The record's compilerAttrs: the vocab ops' grid becomes this rank's
    // first row, `start`.
    if (record &&
        ops::isCompilerAttribute(record->op, attr.getName().getValue()))
      continue;
    json value = weft::attributeJSON(attr.getValue());
    if (value.is_null()) {
      if (unencodable)
        *unencodable = attr.getName().str();
      return std::nullopt;
    }
    attrs[attr.getName().str()] = value;
  }
  return attrs;
}

/// The plan's element type name as an MLIR type; null for none.
Type dtypeType(MLIRContext *ctx, llvm::StringRef name) {
  Builder b(ctx);
  if (name == "f32")
    return b.getF32Type();
  if (name == "f64")
    return b.getF64Type();
  if (name == "f16")
    return b.getF16Type();
  if (name == "bf16")
    return b.getBF16Type();
  if (name == "bool")
    return b.getI1Type();
  unsigned width;
  if (name.size() > 1 && !name.drop_front().getAsInteger(10, width))
    return name[0] == 'u' ? IntegerType::get(ctx, width, IntegerType::Unsigned)
                          : IntegerType::get(ctx, width);
  return {};
}

} // namespace

std::optional<json> weft::kernelAttributes(Operation &op,
                                           std::string *unencodable) {
  NamedAttrList attrList(op.getAttrDictionary());
  op.getName().populateDefaultAttrs(attrList);
  std::optional<json> attrs =
      planAttributes(opRecord(&op), attrList, unencodable);
  if (!attrs)
    return std::nullopt;
  // Its optional weights and log-sum-exp: the attribute says which the last
  // input is.
  if (auto loss = dyn_cast<SoftmaxCrossEntropyGradOp>(op);
      loss && loss.getLogSumExp())
    (*attrs)["log_sum_exp"] = true;
  if (int64_t rows = vocabShardRows(op); rows >= 0) {
    (*attrs)["start"] = 0;
    if (isa<VocabParallelGatherGradOp>(op))
      (*attrs)["rows"] = rows;
  }
  return attrs;
}

namespace {

/// `operands`' types as the plan's inputs; failure (with `emitError`'s
/// message, when there is an `emitError`) for an element type weft-run has
/// no kernel for.
FailureOr<std::vector<ops::OperandDesc>>
operandDescs(ValueRange operands,
             llvm::function_ref<InFlightDiagnostic()> emitError) {
  std::vector<ops::OperandDesc> descs;
  for (auto [k, v] : llvm::enumerate(operands)) {
    auto type = cast<ShapedType>(v.getType());
    std::string dtype = weft::dtypeName(type.getElementType());
    if (dtype.empty() && !emitError)
      return failure();
    if (dtype.empty())
      return emitError() << "operand " << k << " has element type "
                         << type.getElementType()
                         << ", which weft-run has no kernel for";
    descs.push_back({dtype, type.getShape().vec(), 0});
  }
  return descs;
}

/// The MLIR types of a kernel rule's outputs.
SmallVector<Type> resultTypes(MLIRContext *ctx,
                              const std::vector<ops::OperandDesc> &outputs) {
  SmallVector<Type> types;
  for (const ops::OperandDesc &out : outputs)
    types.push_back(
        RankedTensorType::get(out.shape, dtypeType(ctx, out.dtype)));
  return types;
}

/// The context's memo of kernel rules; null before the dialect loads.
weft::KernelRuleCache *kernelRules(MLIRContext *ctx) {
  auto *dialect = ctx->getLoadedDialect<weft::WeftDialect>();
  return dialect ? &dialect->kernelRules() : nullptr;
}

} // namespace

LogicalResult weft::inferKernelTypesByProperties(
    MLIRContext *ctx, std::optional<Location> loc, TypeID opClass,
    const ops::OpRecord &record, ArrayRef<Attribute> inherent,
    DictionaryAttr named, ArrayRef<NamedAttribute> extra, ValueRange operands,
    function_ref<Attribute()> properties, SmallVectorImpl<Type> &types) {
  // Keyed by the properties' attributes in ODS order, then the named ones:
  // the verifier infers every op's types again after each pass, and a
  // dictionary of the properties, uniqued under the context's lock, was
  // most of that time at GPT-3 scale.
  KernelRuleCache *rules = kernelRules(ctx);
  KernelRuleCache::Key key{
      reinterpret_cast<const void *>(static_cast<uintptr_t>(
          KernelRuleCache::Asker::InferenceByProperties)),
      opClass.getAsOpaquePointer()};
  for (Attribute value : inherent)
    key.push_back(value ? value.getAsOpaquePointer() : nullptr);
  if (named)
    KernelRuleCache::appendNamed(key, named.getValue());
  KernelRuleCache::appendNamed(key, extra);
  key.push_back(nullptr);
  for (Type type : operands.getTypes())
    key.push_back(type.getAsOpaquePointer());
  if (rules)
    if (auto known = rules->lookup(key)) {
      types.append(known->begin(), known->end());
      return success();
    }

  NamedAttrList attrs(named);
  // A generic build may pass the inherent attributes in the dictionary too:
  // set, not append, so each name stays unique.
  if (auto dict = dyn_cast_or_null<DictionaryAttr>(properties()))
    for (NamedAttribute a : dict)
      attrs.set(a.getName(), a.getValue());
  for (NamedAttribute a : extra)
    attrs.set(a.getName(), a.getValue());
  size_t before = types.size();
  if (failed(inferKernelTypes(record.op, ctx, loc, operands,
                              attrs.getDictionary(ctx), types)))
    return failure();
  if (rules)
    rules->insert(std::move(key), ArrayRef<Type>(types).drop_front(before));
  return success();
}

LogicalResult weft::inferKernelTypes(ops::Op op, MLIRContext *ctx,
                                     std::optional<Location> loc,
                                     ValueRange operands, DictionaryAttr attrs,
                                     SmallVectorImpl<Type> &types) {
  KernelRuleCache *rules = kernelRules(ctx);
  KernelRuleCache::Key key;
  if (rules) {
    key = KernelRuleCache::key(
        KernelRuleCache::Asker::Inference,
        reinterpret_cast<const void *>(static_cast<uintptr_t>(op)), attrs,
        operands.getTypes());
    if (auto known = rules->lookup(key)) {
      types.append(known->begin(), known->end());
      return success();
    }
  }
  std::string_view mnemonic = ops::record(op).mnemonic;
  llvm::StringRef kernel(mnemonic.data(), mnemonic.size());
  auto emitAt = [&] { return mlir::emitError(*loc) << kernel << ": "; };
  llvm::function_ref<InFlightDiagnostic()> emitError = nullptr;
  if (loc)
    emitError = emitAt;
  std::string unencodable;
  std::optional<json> planAttrs =
      planAttributes(&ops::record(op), NamedAttrList(attrs), &unencodable);
  if (!planAttrs)
    return loc ? emitError()
                     << "attribute '" << unencodable << "' has no plan form"
               : failure();
  FailureOr<std::vector<ops::OperandDesc>> inputs =
      operandDescs(operands, emitError);
  if (failed(inputs))
    return failure();
  std::vector<ops::OperandDesc> outputs;
  std::string error = ops::inferOutputs(op, *inputs, *planAttrs, &outputs);
  if (!error.empty())
    return loc ? emitError() << error : failure();
  SmallVector<Type> inferred = resultTypes(ctx, outputs);
  if (rules)
    rules->insert(std::move(key), inferred);
  types.append(inferred);
  return success();
}

LogicalResult weft::verifyKernelContract(Operation *op) {
  const ops::OpRecord *record = opRecord(op);
  if (!record || !record->isKernel())
    return success();
  // Its inferred types were the rule's (verifyInferredResultTypes).
  if (op->hasTrait<KernelTypedResults>())
    return success();
  KernelRuleCache *rules = kernelRules(op->getContext());
  KernelRuleCache::Key key;
  if (rules) {
    key = KernelRuleCache::key(KernelRuleCache::Asker::Verifier,
                               op->getName().getAsOpaquePointer(),
                               op->getAttrDictionary(), op->getOperandTypes());
    if (auto known = rules->lookup(key);
        known && TypeRange(*known) == op->getResultTypes())
      return success();
  }
  llvm::StringRef kernel(record->mnemonic.data(), record->mnemonic.size());
  std::string unencodable;
  std::optional<json> attrs = kernelAttributes(*op, &unencodable);
  if (!attrs)
    return op->emitOpError("attribute '")
           << unencodable << "' has no plan form: weft-run's " << kernel
           << " kernel could not be given it";
  FailureOr<std::vector<ops::OperandDesc>> inputs =
      operandDescs(op->getOperands(), [&] { return op->emitOpError(); });
  if (failed(inputs))
    return failure();
  std::vector<ops::OperandDesc> outputs;
  std::string error = ops::inferOutputs(record->op, *inputs, *attrs, &outputs);
  if (!error.empty())
    return op->emitOpError("weft-run's ")
           << kernel << " kernel refuses it: " << error;
  SmallVector<Type> expected = resultTypes(op->getContext(), outputs);
  if (rules)
    rules->insert(std::move(key), expected);
  if (TypeRange(expected) == op->getResultTypes())
    return success();
  InFlightDiagnostic diag = op->emitOpError("has result types (");
  llvm::interleaveComma(op->getResultTypes(), diag);
  diag << "), weft-run's " << kernel << " kernel writes (";
  llvm::interleaveComma(expected, diag);
  return diag << ")";
}
