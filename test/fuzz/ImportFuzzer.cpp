//===- ImportFuzzer.cpp - libFuzzer target: the ONNX importer -------------===//
//
// Input: a binary ONNX model (protobuf). The importer must return a module
// that verifies, or null after diagnostics; a crash, a sanitizer report, an
// escaped exception or an abort is a finding. Diagnostics are discarded.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftDialect.h"
#include "weft/Import/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context;
  context.loadDialect<weft::WeftDialect, mlir::func::FuncDialect>();
  context.printOpOnDiagnostic(false);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::StringRef buffer(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module = weft::importONNX(
      buffer, "fuzz.onnx", /*isText=*/false, weft::ImportOptions(), &context);
  // An imported module must be valid IR: the importer checks what it emits.
  if (module && mlir::failed(mlir::verify(*module)))
    std::abort();
  return 0;
}
