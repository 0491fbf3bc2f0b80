//===- weft-tblgen.cpp - the op records, from the dialect's definitions ---===//
//
// Reads the weft dialect's .td files and writes the op record table,
// runtime/include/weft/ops/Ops.def: one WEFT_OP line per op, in definition
// order, with the columns its definition states (lowering, backends,
// precision, split, flops; WeftBase.td documents them) and its gradient
// column, Rule exactly when the op declares GradientOpInterface.
//
// The table is a generated file checked in beside the runtime, because the
// runtime builds without LLVM (runtime/CMakeLists.txt); the top-level build
// regenerates it and copies it there when it changed, so a stale copy is a
// diff, as with docs/generated.
//
//   weft-tblgen -I include -I <mlir include> WeftOps.td -o Ops.def
//
//===----------------------------------------------------------------------===//

#include "mlir/TableGen/Attribute.h"
#include "mlir/TableGen/Operator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TableGen/Error.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"

using namespace llvm;

namespace {

/// The op's `Id`: its def name without `Weft_` and `Op`
/// (`Weft_LayerNormOp` -> `LayerNorm`), the dialect class weft::<Id>Op.
StringRef opId(const Record &op) {
  StringRef name = op.getName();
  if (!name.consume_front("Weft_") || !name.consume_back("Op") || name.empty())
    PrintFatalError(op.getLoc(), "weft op definition '" + op.getName() +
                                     "' is not named Weft_<Id>Op");
  return name;
}

/// The C++ name of a record column's value; the column must be set.
StringRef column(const Record &op, StringRef field) {
  if (op.isValueUnset(field))
    PrintFatalError(op.getLoc(), "weft." + op.getValueAsString("opName") +
                                     ": its record leaves `" + field +
                                     "` unset (WeftBase.td lists the values)");
  return op.getValueAsDef(field)->getValueAsString("value");
}

/// Whether `traits` (nested trait lists included) declare the interface.
bool declaresInterface(ArrayRef<const Init *> traits, StringRef interface) {
  for (const Init *init : traits) {
    const auto *def = dyn_cast<DefInit>(init);
    if (!def)
      continue;
    const Record *trait = def->getDef();
    if (trait->isSubClassOf("Interface") &&
        trait->getValueAsString("cppInterfaceName") == interface)
      return true;
    if (trait->isSubClassOf("TraitList") &&
        declaresInterface(trait->getValueAsListInit("traits")->getElements(),
                          interface))
      return true;
  }
  return false;
}

/// The plan's kind of an ODS attribute (KernelSpec.h's AttrKind), from the
/// attribute definition under its DefaultValuedAttr/OptionalAttr wrapper;
/// empty for one the plan cannot carry.
StringRef planKind(const mlir::tblgen::Attribute &attr) {
  return StringSwitch<StringRef>(attr.getBaseAttr().getAttrDefName())
      .Cases({"I64Attr", "SI64Attr", "I32Attr"}, "Int")
      .Cases({"F64Attr", "F32Attr"}, "Float")
      .Cases({"BoolAttr", "UnitAttr"}, "Bool")
      .Cases({"StrAttr", "TypeAttr"}, "String")
      .Cases({"DenseI64ArrayAttr", "I64ArrayAttr"}, "Ints")
      .Cases({"DenseF64ArrayAttr", "F64ArrayAttr"}, "Floats")
      .Default("");
}

/// A kernel op's plan signature: WEFT_OP_INPUTS (its operand counts, from
/// its ODS operands unless `minInputs`/`maxInputs` narrow them) and one
/// WEFT_OP_ATTR per plan attribute (its ODS attributes less
/// `compilerAttrs`, then `planAttrs`): Required, Optional, or Defaulted
/// with the ODS default, which weft-run fills in when a plan omits it.
void emitKernelSignature(raw_ostream &os, const Record &def, StringRef id) {
  mlir::tblgen::Operator op(def);
  StringRef mnemonic = def.getValueAsString("opName");
  int minInputs = 0, maxInputs = 0;
  for (int k = 0; k < op.getNumOperands(); ++k) {
    const mlir::tblgen::NamedTypeConstraint &operand = op.getOperand(k);
    if (operand.isVariadic())
      maxInputs = -1;
    else if (maxInputs >= 0)
      ++maxInputs;
    if (!operand.isOptional() && !operand.isVariadic())
      ++minInputs;
  }
  int64_t narrowMin = def.getValueAsInt("minInputs"),
          narrowMax = def.getValueAsInt("maxInputs");
  if ((narrowMin >= 0 && narrowMin < minInputs) ||
      (narrowMax >= 0 && maxInputs >= 0 && narrowMax > maxInputs))
    PrintFatalError(def.getLoc(), "weft." + mnemonic +
                                      ": minInputs/maxInputs widen its ODS "
                                      "operand counts");
  if (narrowMin >= 0)
    minInputs = narrowMin;
  if (narrowMax >= 0)
    maxInputs = narrowMax;
  os << "WEFT_OP_INPUTS(" << id << ", " << minInputs << ", " << maxInputs
     << ")\n";

  // Each operand's dtype set, the last for the rest (a variadic operand
  // must be last); trailing repeats folded into the last.
  SmallVector<StringRef> dtypes;
  for (int k = 0; k < op.getNumOperands(); ++k) {
    const mlir::tblgen::NamedTypeConstraint &operand = op.getOperand(k);
    const Record &type = operand.constraint.getDef();
    const Record *tensor = &type;
    if (type.isSubClassOf("Variadic") || type.isSubClassOf("Optional"))
      tensor = type.getValueAsDef("baseType");
    if (!tensor->getValue("dtypeSet"))
      PrintFatalError(def.getLoc(), "weft." + mnemonic + ": operand '" +
                                        operand.name +
                                        "' is not a Weft_TensorOf (no dtype "
                                        "set)");
    if (operand.isVariadic() && k + 1 != op.getNumOperands())
      PrintFatalError(def.getLoc(),
                      "weft." + mnemonic + ": a variadic operand must be last");
    dtypes.push_back(tensor->getValueAsString("dtypeSet"));
  }
  while (dtypes.size() > 1 && dtypes.back() == dtypes[dtypes.size() - 2])
    dtypes.pop_back();
  os << "WEFT_OP_DTYPES(" << id;
  for (StringRef set : dtypes)
    os << ", " << set;
  os << ")\n";
  // A variadic result or operand bounds nothing.
  int maxOutputs = op.getNumResults();
  for (int k = 0; k < op.getNumResults(); ++k)
    if (op.getResult(k).isVariadic())
      maxOutputs = -1;
  for (const Record *pair : def.getValueAsListOfDefs("inPlace")) {
    int64_t output = pair->getValueAsInt("output"),
            input = pair->getValueAsInt("input");
    if (output < 0 || (maxOutputs >= 0 && output >= maxOutputs) || input < 0 ||
        (maxInputs >= 0 && input >= maxInputs))
      PrintFatalError(def.getLoc(), "weft." + mnemonic + ": in-place pair (" +
                                        Twine(output) + ", " + Twine(input) +
                                        ") names no result or operand");
    os << "WEFT_OP_INPLACE(" << id << ", " << output << ", " << input << ", "
       << (pair->getValueAsBit("required") ? "true" : "false") << ")\n";
  }

  StringSet<> compilerOnly;
  for (StringRef name : def.getValueAsListOfStrings("compilerAttrs")) {
    compilerOnly.insert(name);
    os << "WEFT_OP_COMPILER_ATTR(" << id << ", \"" << name << "\")\n";
  }
  for (const mlir::tblgen::NamedAttribute &named : op.getAttributes()) {
    const mlir::tblgen::Attribute &attr = named.attr;
    if (attr.isDerivedAttr() || compilerOnly.erase(named.name))
      continue;
    StringRef kind = planKind(attr);
    if (kind.empty())
      PrintFatalError(def.getLoc(),
                      "weft." + mnemonic + ": attribute '" + named.name +
                          "' has no plan kind; list it in compilerAttrs if "
                          "the plan does not carry it");
    os << "WEFT_OP_ATTR(" << id << ", \"" << named.name << "\", " << kind
       << ", ";
    if (attr.hasDefaultValue()) {
      StringRef value = attr.getDefaultValue();
      if (value.contains(','))
        PrintFatalError(def.getLoc(), "weft." + mnemonic +
                                          ": the default of '" + named.name +
                                          "' is not a plain literal");
      os << "Defaulted, " << value;
    } else {
      os << (attr.isOptional() ? "Optional, " : "Required, ");
    }
    os << ")\n";
  }
  if (!compilerOnly.empty())
    PrintFatalError(def.getLoc(), "weft." + mnemonic +
                                      ": compilerAttrs names '" +
                                      compilerOnly.begin()->getKey() +
                                      "', which is not an attribute of it");
  for (const Record *extra : def.getValueAsListOfDefs("planAttrs"))
    os << "WEFT_OP_ATTR(" << id << ", \"" << extra->getValueAsString("name")
       << "\", " << extra->getValueAsString("kind") << ", "
       << (extra->getValueAsBit("required") ? "Required" : "Optional")
       << ", )\n";
}

StringRef fileOf(const Record &op) {
  unsigned buffer = SrcMgr.FindBufferContainingLoc(op.getLoc().front());
  return sys::path::filename(
      SrcMgr.getMemoryBuffer(buffer)->getBufferIdentifier());
}

bool emitOpRecords(raw_ostream &os, const RecordKeeper &records) {
  std::vector<const Record *> ops(records.getAllDerivedDefinitions("Weft_Op"));
  llvm::sort(ops, [](const Record *a, const Record *b) {
    return a->getID() < b->getID();
  });

  os << R"(//===- Ops.def - one record per weft op: generated, do not edit -*- C++ -*-===//
//
// Written by weft-tblgen from the weft dialect's .td files, where each op's
// definition states these columns (include/weft/Dialect/Weft/IR/WeftBase.td
// documents them). The build regenerates this file; edit the .td.
//
// Every op of the `weft` dialect, once, with the facts the compiler and the
// runtime both derive from it. An op's record is this line plus, for a
// kernel, its specification entry (runtime/lib/specs: input counts,
// attributes, the shape, dtype and FLOP rule, in-place pairs), keyed by the
// same `Op` enumerator:
//
//   - the compiler's precision policy (weft-mixed-precision), tensor- and
//     sequence-parallel rules, views, FLOPs and bytes, the in-place pairs of
//     its memory plan, and the check of every plan instruction before it is
//     written (lib/Dialect/Weft/IR/OpRecords.cpp reads this table);
//   - the runtime's plan loader and kernel tables (CPU and CUDA kernels are
//     registered against `Op::Id`, not by string);
//   - docs/generated/Kernels.md (weft-run --kernels).
//
// WEFT_OP(Id, mnemonic, Lowering, Backends, Gradient, Precision, Split, Flops)
//   every op
// WEFT_OP_INPUTS(Id, min, max)
//   a kernel op's input count, from its ODS operands; max -1: no bound
// WEFT_OP_ATTR(Id, name, Kind, Presence, Default)
//   a kernel op's plan attributes, from its ODS attributes and planAttrs:
//   Kind as KernelSpec.h's AttrKind; Presence Required, Optional, or
//   Defaulted with its ODS default (a C++ literal), filled in at load
// WEFT_OP_COMPILER_ATTR(Id, name)
//   an ODS attribute of a kernel op that its plan instruction does not carry
// WEFT_OP_DTYPES(Id, Set...)
//   the dtypes a kernel op admits for each input, the last set for the rest,
//   from its operands' Weft_TensorOf constraints (KernelSpec.h's dtypes::)
// WEFT_OP_INPLACE(Id, output, input, required)
//   an output a kernel op writes over an input (its inPlace list)
//
// A consumer defines the macros it reads; the others expand to nothing.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_OP
#define WEFT_OP(Id, mnemonic, Lowering, Backends, Gradient, Precision, Split, Flops)
#endif
#ifndef WEFT_OP_INPUTS
#define WEFT_OP_INPUTS(Id, min, max)
#endif
#ifndef WEFT_OP_ATTR
#define WEFT_OP_ATTR(Id, name, Kind, Presence, ...)
#endif
#ifndef WEFT_OP_COMPILER_ATTR
#define WEFT_OP_COMPILER_ATTR(Id, name)
#endif
#ifndef WEFT_OP_DTYPES
#define WEFT_OP_DTYPES(Id, ...)
#endif
#ifndef WEFT_OP_INPLACE
#define WEFT_OP_INPLACE(Id, output, input, required)
#endif
)";
  StringRef file;
  for (const Record *op : ops) {
    if (fileOf(*op) != file) {
      file = fileOf(*op);
      os << "\n// " << file << "\n";
    }
    bool gradient = declaresInterface(
        op->getValueAsListInit("traits")->getElements(), "GradientOpInterface");
    os << "WEFT_OP(" << opId(*op) << ", \"" << op->getValueAsString("opName")
       << "\", " << column(*op, "lowering") << ", " << column(*op, "backends")
       << ", " << (gradient ? "Rule" : "NotDifferentiable") << ", "
       << column(*op, "precision") << ", " << column(*op, "split") << ", "
       << column(*op, "flops") << ")\n";
    if (column(*op, "lowering") == "Kernel")
      emitKernelSignature(os, *op, opId(*op));
  }
  os << "\n#undef WEFT_OP\n#undef WEFT_OP_INPUTS\n#undef WEFT_OP_ATTR\n"
     << "#undef WEFT_OP_COMPILER_ATTR\n#undef WEFT_OP_DTYPES\n"
     << "#undef WEFT_OP_INPLACE\n";
  return false;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "weft op record generator\n");
  return TableGenMain(argv[0], &emitOpRecords);
}
