//===- PlanJson.h - building version-2 plans in tests -----------*- C++ -*-===//
#ifndef WEFT_TEST_UNIT_RUNTIME_PLANJSON_H
#define WEFT_TEST_UNIT_RUNTIME_PLANJSON_H

#include <nlohmann/json.hpp>

#include <vector>

namespace weft::rt::test {

/// Gives `plan` one program per rank (rank r runs programs[r]), from
/// version-1 style rank objects: their `rank` and `coords` are dropped (the
/// mesh gives them), so a test edits programs[r] for rank r.
inline void setRanks(nlohmann::json &plan, std::vector<nlohmann::json> ranks) {
  plan["programs"] = nlohmann::json::array();
  plan["rank_programs"] = nlohmann::json::array();
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].erase("rank");
    ranks[r].erase("coords");
    plan["programs"].push_back(ranks[r]);
    plan["rank_programs"].push_back(r);
  }
}

} // namespace weft::rt::test

#endif // WEFT_TEST_UNIT_RUNTIME_PLANJSON_H
