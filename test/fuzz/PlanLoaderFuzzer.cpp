//===- PlanLoaderFuzzer.cpp - libFuzzer target: plan loader + validator ---===//
//
// Input: the bytes of a plan file. The loader must accept it or throw
// weft::rt::Error; anything else (a crash, a sanitizer report, another
// exception) is a finding. A plan it accepts whose single rank fits in 1 MiB
// then runs one step on zeroed data, so a shape the kernel table admits but
// a kernel mishandles is a finding too. Every input is also loaded as the
// processes of ranks 0 and 1 load it (loadPlan's onlyRank: that rank in
// full, the others' transfers), which must accept it or throw Error too.
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/Backend.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/Plan.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace weft::rt;
  static std::unique_ptr<Backend> backend = createCpuBackend();
  std::string text(reinterpret_cast<const char *>(data), size);
  auto known = [](const std::string &kernel) {
    return backend->hasKernel(kernel);
  };
  for (int64_t rank : {0, 1}) {
    try {
      (void)parsePlan(text, "fuzz.json", known, rank);
    } catch (const Error &) {
    }
  }
  try {
    Plan plan = parsePlan(text, "fuzz.json", known);
    const RankPlan &rank = plan.ranks[0];
    if (plan.ranks.size() != 1 || rank.arenaBytes > (1 << 20) ||
        rank.instructions.size() > 1000)
      return 0;
    Executor executor(plan, 0, *backend);
    executor.run(/*step=*/0, /*seed=*/0, nullptr);
  } catch (const Error &) {
  }
  return 0;
}
