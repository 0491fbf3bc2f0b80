//===- TextDataTest.cpp - byte-level LM batches from a text file ----------===//

#include "weft/runtime/TextData.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

using namespace weft::rt;

namespace {

/// A file of `train` lowercase bytes then `val` uppercase bytes, so a window
/// that crosses the split shows both cases.
std::string writeText(int64_t train, int64_t val) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("weft-text-" + std::to_string(train) + "-" +
                       std::to_string(val) + ".txt"))
                         .string();
  std::ofstream out(path, std::ios::binary);
  for (int64_t i = 0; i < train; ++i)
    out << char('a' + i % 26);
  for (int64_t i = 0; i < val; ++i)
    out << char('A' + i % 26);
  return path;
}

Plan lmPlan(int64_t batch, int64_t seq, int64_t vocab = 256,
            DType dtype = DType::I64) {
  Plan plan;
  for (const char *name : {"tokens", "targets"})
    plan.inputs.push_back({name, dtype, {batch, seq}, vocab});
  return plan;
}

std::vector<int64_t> values(const std::string &bytes) {
  std::vector<int64_t> v(bytes.size() / 8);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(TextData, TargetsAreTheNextByteAndWindowsStayInTheirSplit) {
  // 900 + 100 bytes: holdout 0.1 splits exactly at the case change.
  TextData text(writeText(900, 100), 0.1);
  EXPECT_EQ(text.trainBytes(), 900);
  EXPECT_EQ(text.validationBytes(), 100);
  Plan plan = lmPlan(4, 16);
  for (auto split : {TextData::Split::Train, TextData::Split::Validation})
    for (int64_t step = 0; step < 50; ++step) {
      auto batch = text.inputs(plan, "tokens", "targets", split, 7, step);
      std::vector<int64_t> x = values(batch["tokens"]),
                           y = values(batch["targets"]);
      ASSERT_EQ(x.size(), 64u);
      char first = split == TextData::Split::Train ? 'a' : 'A';
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_GE(x[i], first);
        EXPECT_LT(x[i], first + 26);
        // Every byte is followed by the next letter of the alphabet.
        EXPECT_EQ(y[i], first + (x[i] - first + 1) % 26);
        if (i % 16) {
          EXPECT_EQ(x[i], y[i - 1]);
        }
      }
    }
}

TEST(TextData, TrainingWindowsAreAFunctionOfSeedAndStep) {
  TextData text(writeText(5000, 1000), 1000.0 / 6000);
  Plan plan = lmPlan(8, 32);
  auto draw = [&](uint64_t seed, int64_t step) {
    return text.inputs(plan, "tokens", "targets", TextData::Split::Train,
                       seed, step)["tokens"];
  };
  EXPECT_EQ(draw(1, 3), draw(1, 3));
  EXPECT_NE(draw(1, 3), draw(1, 4));
  EXPECT_NE(draw(1, 3), draw(2, 3));
}

TEST(TextData, ValidationTilesTheSplitInOrder) {
  // 26 * 10 uppercase bytes: the alphabet ten times.
  TextData text(writeText(780, 260), 0.25);
  Plan plan = lmPlan(2, 13);
  for (uint64_t seed : {0u, 9u}) {
    std::vector<int64_t> x = values(text.inputs(
        plan, "tokens", "targets", TextData::Split::Validation, seed,
        1)["tokens"]);
    // Step 1 reads windows 2 and 3: bytes 26.. and 39.. of the split.
    EXPECT_EQ(x[0], 'A');
    EXPECT_EQ(x[13], 'N');
  }
}

TEST(TextData, Int32TokensAreWritten) {
  TextData text(writeText(900, 100), 0.1);
  auto batch = text.inputs(lmPlan(1, 4, 256, DType::I32), "tokens",
                           "targets", TextData::Split::Validation, 0, 0);
  ASSERT_EQ(batch["tokens"].size(), 16u);
  int32_t v[4];
  std::memcpy(v, batch["targets"].data(), 16);
  EXPECT_EQ(v[0], 'B');
  EXPECT_EQ(v[3], 'E');
}

TEST(TextData, BadInputsAreNamed) {
  std::string path = writeText(900, 100);
  TextData text(path, 0.1);
  auto inputs = [&](const Plan &plan, const char *tokens = "tokens") {
    return [&plan, &text, tokens] {
      text.inputs(plan, tokens, "targets", TextData::Split::Train, 0, 0);
    };
  };
  EXPECT_EQ(errorOf([] { TextData("/nonexistent/text", 0.1); }),
            "--data text: cannot read '/nonexistent/text'");
  EXPECT_EQ(errorOf([&] { TextData(path, 1.0); }),
            "--holdout: 1.000000 is not a fraction in (0, 1)");
  EXPECT_EQ(errorOf(inputs(lmPlan(2, 8), "ids")),
            "--data text: the plan has no input 'ids' (its inputs: 'tokens', "
            "'targets'); name them with --text-inputs TOKENS,TARGETS");
  EXPECT_EQ(errorOf(inputs(lmPlan(2, 8, 100))),
            "--data text: input 'tokens' takes values below 100; byte tokens "
            "need a vocabulary of at least 256");
  EXPECT_EQ(errorOf(inputs(lmPlan(2, 8, 256, DType::F32))),
            "--data text: input 'tokens' is [2x8] f32, not [batch, seq] "
            "int64 or int32 tokens");
  EXPECT_EQ(errorOf(inputs(lmPlan(2, 900))),
            "--data text:" + path +
                ": the training split has 900 bytes, fewer than one window "
                "of 901 (sequence 900 + 1)");
  Plan mismatched = lmPlan(2, 8);
  mismatched.inputs[1].shape = {2, 9};
  EXPECT_EQ(errorOf(inputs(mismatched)),
            "--data text: inputs 'tokens' [2x8] and 'targets' [2x9] differ "
            "in shape");
}

} // namespace
