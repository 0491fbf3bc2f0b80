//===- GradientBuckets.cpp - DDP's gradient bucket assignment -------------===//

#include "weft/Analysis/GradientBuckets.h"

#include <algorithm>
#include <map>

namespace weft {

std::vector<std::vector<size_t>>
assignGradientBuckets(llvm::ArrayRef<BucketTensor> tensors, int64_t capBytes,
                      int64_t firstCapBytes) {
  struct Open {
    std::vector<size_t> tensors;
    int64_t bytes = 0;
    bool first = true; ///< no bucket of this key closed yet
  };
  std::map<int64_t, Open> open;
  std::vector<std::vector<size_t>> buckets;
  for (size_t i = 0; i < tensors.size(); ++i) {
    Open &bucket = open[tensors[i].key];
    bucket.tensors.push_back(i);
    bucket.bytes += tensors[i].bytes;
    int64_t limit =
        bucket.first ? std::min(firstCapBytes, capBytes) : capBytes;
    if (bucket.bytes >= limit) {
      buckets.push_back(std::move(bucket.tensors));
      bucket.tensors.clear();
      bucket.bytes = 0;
      bucket.first = false;
    }
  }
  for (auto &[key, bucket] : open)
    if (!bucket.tensors.empty())
      buckets.push_back(std::move(bucket.tensors));
  // DDP orders buckets by their first tensor (reducer.cpp sorts them).
  std::sort(buckets.begin(), buckets.end(),
            [](const auto &a, const auto &b) { return a[0] < b[0]; });
  return buckets;
}

} // namespace weft
