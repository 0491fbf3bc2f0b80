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

#include "llvm/ADT/STLExtras.h"
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
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_OP
#error "define WEFT_OP(Id, mnemonic, Lowering, Backends, Gradient, Precision, Split, Flops) before including Ops.def"
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
  }
  os << "\n#undef WEFT_OP\n";
  return false;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "weft op record generator\n");
  return TableGenMain(argv[0], &emitOpRecords);
}
