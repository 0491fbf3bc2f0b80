//===- ConstantData.h - how a plan writes a constant's bytes ----*- C++ -*-===//
//
// A program's `constants` entry: the bytes inline (base64) or, from
// kSharedConstantBytes on, named by their SHA-256 and written once per plan
// in `constant_data` (docs/plan-format.md): a GPT-3 causal mask (4 MiB) is
// read by every stage's program.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_LIB_TARGET_PLAN_CONSTANTDATA_H
#define WEFT_LIB_TARGET_PLAN_CONSTANTDATA_H

#include "mlir/IR/BuiltinAttributes.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>

namespace weft {

/// Constants of this many bytes or more go to the plan's `constant_data`.
inline constexpr size_t kSharedConstantBytes = 1024;

/// `{buffer, data}` with `value`'s little-endian bytes in base64, or
/// `{buffer, data_sha256}` (the SHA-256 of the bytes, 64 lowercase hex
/// digits) with the base64 added to `shared` under that key.
nlohmann::json constantEntry(int64_t buffer, mlir::DenseElementsAttr value,
                             std::map<std::string, std::string> &shared);

} // namespace weft

#endif // WEFT_LIB_TARGET_PLAN_CONSTANTDATA_H
