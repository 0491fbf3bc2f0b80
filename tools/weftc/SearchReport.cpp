//===- SearchReport.cpp - what --auto-parallel prints ---------------------===//
//
// The search's printed outcome (AutoParallel.h): the reasons layouts do
// not compile, the table of layouts, and the error when none fits.
//
//===----------------------------------------------------------------------===//

#include "AutoParallel.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cctype>
#include <map>

void weft::printCompileFailures(llvm::ArrayRef<LayoutScore> scores,
                                llvm::raw_ostream &os, size_t reasons) {
  // Each reason's count and first layout, most frequent first. A reason
  // is the error's first line with its numbers left out ("1 micro-batches
  // is not a multiple of 2" and of 4 are one reason); the first layout's
  // own message is shown.
  struct Reason {
    int64_t count = 0;
    const LayoutScore *example = nullptr;
  };
  std::map<std::string, size_t> index;
  std::vector<Reason> groups;
  for (const LayoutScore &s : scores) {
    if (s.compiled())
      continue;
    std::string key;
    for (char c : llvm::StringRef(s.error).split('\n').first)
      if (!std::isdigit(static_cast<unsigned char>(c)))
        key += c;
    auto [at, fresh] = index.try_emplace(key, groups.size());
    if (fresh)
      groups.push_back({0, &s});
    ++groups[at->second].count;
  }
  std::stable_sort(
      groups.begin(), groups.end(),
      [](const Reason &a, const Reason &b) { return a.count > b.count; });
  for (size_t i = 0; i < groups.size() && i < reasons; ++i)
    os << llvm::formatv(
        "  {0} do not compile: {1} (e.g. {2})\n", groups[i].count,
        llvm::StringRef(groups[i].example->error).split('\n').first,
        groups[i].example->layout.flags());
  if (groups.size() > reasons)
    os << llvm::formatv("  {0} more reasons\n", groups.size() - reasons);
}

void weft::printLayoutTable(llvm::ArrayRef<LayoutScore> rows,
                            llvm::raw_ostream &os, int64_t first) {
  os << llvm::formatv("{0,4}  {1,-40} {2,10} {3,10} {4,6} {5,6} {6,14} "
                      "{7,10} {8,10} {9,10} {10,10} {11,10}  {12,-11}  {13}\n",
                      "#", "layout", "step ms", "samples/s", "MFU%", "HFU%",
                      "peak bytes", "compute", "memory", "bubble", "tensor",
                      "data", "bound", "how");
  for (auto [i, row] : llvm::enumerate(rows))
    os << llvm::formatv("{0,4}  {1,-40} {2,10:f2} {3,10:f2} {4,6:f1} "
                        "{5,6:f1} {6,14} {7,10:f2} {8,10:f2} {9,10:f2} "
                        "{10,10:f2} {11,10:f2}  {12,-11}  {13}\n",
                        first + int64_t(i), row.layout.brief(),
                        row.stepSeconds * 1e3, row.samplesPerSecond,
                        100 * row.mfu, 100 * row.hfu, row.peakBytes,
                        row.compute * 1e3, row.memory * 1e3, row.bubble * 1e3,
                        row.tensorComm * 1e3, row.dataComm * 1e3, row.bound(),
                        row.estimated ? "estimated" : "compiled");
}

std::string weft::nothingFits(const SearchResult &result, int64_t capBytes) {
  const LayoutScore *smallest = nullptr;
  for (const LayoutScore &s : result.scores)
    if (s.compiled() && (!smallest || s.peakBytes < smallest->peakBytes))
      smallest = &s;
  if (!smallest)
    return "no layout compiles; the first error: " +
           (result.scores.empty() ? std::string("(no layouts)")
                                  : result.scores.front().error);
  const MemoryBreakdown &memory = smallest->breakdown;
  size_t largest = std::max_element(memory.bytes.begin(), memory.bytes.end()) -
                   memory.bytes.begin();
  return llvm::formatv("no layout fits {0} bytes a device: the smallest peak "
                       "is {1} bytes ({2}, rank {3}), most of it {4} ({5} "
                       "bytes)",
                       capBytes, smallest->peakBytes, smallest->layout.flags(),
                       smallest->peakRank,
                       categoryName(MemoryCategory(largest)),
                       memory.bytes[largest]);
}
