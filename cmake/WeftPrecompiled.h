//===- WeftPrecompiled.h - the compiler's precompiled headers -------------===//
//
// The headers nearly every pass, analysis and emitter reads: MLIR's IR and
// the weft dialect's generated op classes. GCC spends most of a pass's
// compile parsing them (OverlapCollectives.cpp: 14.1 s, 4.8 s with these
// precompiled), so the compiler's libraries precompile them once per
// library (weft_precompile_headers, WEFT_PCH). Only headers every such
// library already depends on belong here: a library's precompiled header
// is built before its first source, after its own dependencies.
//
//===----------------------------------------------------------------------===//

#include "weft/Dialect/Weft/IR/WeftOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>
