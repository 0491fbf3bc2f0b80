//===- TextData.h - byte-level language-model batches from a file -*- C++ -*-===//
#ifndef WEFT_RUNTIME_TEXTDATA_H
#define WEFT_RUNTIME_TEXTDATA_H

#include "weft/runtime/Plan.h"

#include <map>
#include <string>

namespace weft::rt {

/// A text file as byte tokens (0..255) for a next-token language model
/// (`weft-run --data text:FILE`). The file's last `holdout` fraction of bytes
/// is the validation split, the rest the training split; nothing crosses the
/// boundary.
///
/// A step's batch is B windows of S + 1 consecutive bytes, B x S the shape
/// of the plan's token input: tokens are a window's first S bytes, targets
/// its last S (the next byte of each token). Training windows start at
/// random offsets, as nanoGPT's get_batch draws them: row r of step i
/// starts at Philox4x32-10(key = seed, counter = (r, i, 0x7E47, 0)) modulo
/// (split bytes - S). Validation windows tile the split in order (row r of
/// step i starts at (i B + r) S, wrapping), so K validation steps read the
/// same bytes whatever the seed. Both are pure functions of (seed, step):
/// every rank draws the same batch, and a resumed run continues the data.
class TextData {
public:
  enum class Split { Train, Validation };

  /// Reads `path` whole. Throws Error "--data text: cannot read '<path>'"
  /// when it cannot be read, or naming `--holdout` when `holdout` is not in
  /// (0, 1).
  TextData(const std::string &path, double holdout);

  /// The plan's inputs `tokensName` and `targetsName` for `step`: int64 or
  /// int32 tensors of one shape [B, S], little-endian bytes. Throws Error
  /// naming the input when the plan lacks it, its shape or dtype differ,
  /// its index bound (the model's vocabulary) is below 256, or the split is
  /// shorter than S + 1 bytes.
  std::map<std::string, std::string>
  inputs(const Plan &plan, const std::string &tokensName,
         const std::string &targetsName, Split split, uint64_t seed,
         int64_t step) const;

  int64_t trainBytes() const { return trainEnd; }
  int64_t validationBytes() const { return (int64_t)text.size() - trainEnd; }

private:
  std::string path, text;
  int64_t trainEnd = 0;
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_TEXTDATA_H
