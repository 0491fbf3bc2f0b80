//===- ModelSummaryOutput.cpp - weftc --emit=summary[-json] ---------------===//

#include "ModelSummaryOutput.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace {
/// 1234567 as "1,234,567".
std::string withCommas(int64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}
} // namespace

void weft::printSummary(const ModelSummary &s, StringRef source,
                        raw_ostream &os) {
  os << "model:        " << source << "\n";
  os << "parameters:   " << withCommas(s.params) << " ("
     << withCommas(s.paramBytes) << " bytes)\n";
  os << "frozen:       " << withCommas(s.frozen) << " ("
     << withCommas(s.frozenBytes) << " bytes, not trained)\n";
  os << "state:        " << withCommas(s.stateBytes)
     << " bytes (running statistics and frozen)\n";
  os << "inputs:       " << withCommas(s.inputBytes) << " bytes per batch\n";
  os << "forward:      " << withCommas(s.flops) << " FLOPs per batch ("
     << format("%.3f", s.flops / 1e9) << " GFLOP)\n";
  os << "ops:\n";
  for (const auto &[name, count] : s.opCounts)
    os << "  " << left_justify(name, 28) << count << "\n";
}

nlohmann::json weft::summaryJSON(const ModelSummary &s) {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto &[name, count] : s.opCounts)
    ops[name] = count;
  return {{"params", s.params},
          {"param_bytes", s.paramBytes},
          {"frozen", s.frozen},
          {"frozen_bytes", s.frozenBytes},
          {"state_bytes", s.stateBytes},
          {"input_bytes", s.inputBytes},
          {"flops", s.flops},
          {"bytes_read", s.bytesRead},
          {"bytes_written", s.bytesWritten},
          {"ops", ops}};
}
