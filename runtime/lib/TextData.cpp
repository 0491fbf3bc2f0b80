//===- TextData.cpp - byte-level language-model batches from a file -------===//

#include "weft/runtime/TextData.h"

#include "weft/runtime/Files.h"

#include "../kernels/Philox.h"

#include <cmath>
#include <cstring>

namespace weft::rt {

TextData::TextData(const std::string &path, double holdout) : path(path) {
  if (!(holdout > 0 && holdout < 1))
    throw Error("--holdout: " + std::to_string(holdout) +
                " is not a fraction in (0, 1)");
  text = readFile(path, "--data text");
  trainEnd = text.size() - (int64_t)std::llround(holdout * text.size());
}

namespace {

/// The plan's description of input `name`, checked for a text batch.
const InputDesc &tokenInput(const Plan &plan, const std::string &name) {
  for (const InputDesc &in : plan.inputs) {
    if (in.name != name)
      continue;
    if ((in.dtype != DType::I64 && in.dtype != DType::I32) ||
        in.shape.size() != 2)
      throw Error("--data text: input '" + name + "' is " +
                  shapeString(in.shape) + " " + dtypeName(in.dtype) +
                  ", not [batch, seq] int64 or int32 tokens");
    if (in.indexBound && *in.indexBound < 256)
      throw Error("--data text: input '" + name + "' takes values below " +
                  std::to_string(*in.indexBound) +
                  "; byte tokens need a vocabulary of at least 256");
    return in;
  }
  std::string names;
  for (const InputDesc &in : plan.inputs)
    names += (names.empty() ? "'" : ", '") + in.name + "'";
  throw Error("--data text: the plan has no input '" + name +
              "' (its inputs: " + names +
              "); name them with --text-inputs "
              "TOKENS,TARGETS");
}

void store(char *dst, DType dtype, int64_t value) {
  if (dtype == DType::I64)
    std::memcpy(dst, &value, 8);
  else {
    int32_t v = static_cast<int32_t>(value);
    std::memcpy(dst, &v, 4);
  }
}

} // namespace

std::map<std::string, std::string>
TextData::inputs(const Plan &plan, const std::string &tokensName,
                 const std::string &targetsName, Split split, uint64_t seed,
                 int64_t step) const {
  const InputDesc &tokens = tokenInput(plan, tokensName);
  const InputDesc &targets = tokenInput(plan, targetsName);
  if (targets.shape != tokens.shape)
    throw Error("--data text: inputs '" + tokensName + "' " +
                shapeString(tokens.shape) + " and '" + targetsName + "' " +
                shapeString(targets.shape) + " differ in shape");
  int64_t rows = tokens.shape[0], seq = tokens.shape[1];
  bool train = split == Split::Train;
  int64_t begin = train ? 0 : trainEnd;
  int64_t length = train ? trainEnd : (int64_t)text.size() - trainEnd;
  if (length < seq + 1)
    throw Error("--data text:" + path + ": the " +
                (train ? "training" : "validation") + " split has " +
                std::to_string(length) + " bytes, fewer than one window of " +
                std::to_string(seq + 1) + " (sequence " + std::to_string(seq) +
                " + 1)");
  PhiloxKey key = {uint32_t(seed), uint32_t(seed >> 32)};
  int64_t starts = length - seq; // windows [start, start + seq] fit
  int64_t tokenSize = dtypeSize(tokens.dtype),
          targetSize = dtypeSize(targets.dtype);
  std::string x(rows * seq * tokenSize, '\0'), y(rows * seq * targetSize, '\0');
  for (int64_t r = 0; r < rows; ++r) {
    int64_t start;
    if (train) {
      PhiloxBlock bits =
          philox4x32({uint32_t(r), uint32_t(step), 0x7E47u, 0}, key);
      start = int64_t(((uint64_t(bits[1]) << 32) | bits[0]) % uint64_t(starts));
    } else {
      start = ((step * rows + r) * seq) % starts;
    }
    const unsigned char *window =
        reinterpret_cast<const unsigned char *>(text.data()) + begin + start;
    for (int64_t t = 0; t < seq; ++t) {
      store(x.data() + (r * seq + t) * tokenSize, tokens.dtype, window[t]);
      store(y.data() + (r * seq + t) * targetSize, targets.dtype,
            window[t + 1]);
    }
  }
  return {{tokensName, std::move(x)}, {targetsName, std::move(y)}};
}

} // namespace weft::rt
