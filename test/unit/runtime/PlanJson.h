//===- PlanJson.h - building version-2 plans in tests -----------*- C++ -*-===//
#ifndef WEFT_TEST_UNIT_RUNTIME_PLANJSON_H
#define WEFT_TEST_UNIT_RUNTIME_PLANJSON_H

#include "weft/runtime/Plan.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
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

/// The Error message of loading `plan` (every kernel known), or "" when
/// it loads.
inline std::string errorOf(const nlohmann::json &plan) {
  try {
    parsePlan(plan.dump(), "p.json", [](const std::string &) { return true; });
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

/// An edit of a valid plan and the message the loader must reject it with.
struct Rejection {
  std::function<void(nlohmann::json &)> edit;
  std::string message;
};

/// Each case's edit of `valid()` is rejected with a message containing its
/// `message`.
inline void expectRejections(nlohmann::json (*valid)(),
                             const std::vector<Rejection> &cases) {
  for (const Rejection &c : cases) {
    nlohmann::json plan = valid();
    c.edit(plan);
    std::string message = errorOf(plan);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "expected '" << c.message << "', got '" << message << "'";
  }
}

} // namespace weft::rt::test

#endif // WEFT_TEST_UNIT_RUNTIME_PLANJSON_H
