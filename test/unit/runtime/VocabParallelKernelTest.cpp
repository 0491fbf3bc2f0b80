//===- VocabParallelKernelTest.cpp - vocab shards sum to the whole --------===//
//
// The vocab-parallel kernels on two shards of a vocabulary, combined as the
// plan's all-reduces combine them, equal the whole-vocabulary kernels:
// softmax_cross_entropy (loss, log-probabilities, gradient) and gather /
// gather_grad (Megatron-LM's vocab_parallel_cross_entropy and
// VocabParallelEmbedding).
//
//===----------------------------------------------------------------------===//

#include "weft/runtime/KernelSpec.h"

#include "../../../runtime/kernels/Kernel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace weft::rt;
using json = nlohmann::json;

namespace {

/// A host tensor: f64 values or i64 ids.
struct Host {
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<double> f;
  std::vector<int64_t> i;
  Tensor view() {
    void *data = dtype == DType::F64 ? static_cast<void *>(f.data())
                                     : static_cast<void *>(i.data());
    return Tensor{data, dtype, shape};
  }
};

Host f64(std::vector<int64_t> shape, std::vector<double> values = {}) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  values.resize(n);
  return {DType::F64, shape, values, {}};
}

Host i64(std::vector<int64_t> shape, std::vector<int64_t> values) {
  return {DType::I64, shape, {}, values};
}

/// Checks the instruction against the kernel table, then runs the kernel.
void launch(const char *kernel, std::vector<Host *> in,
            std::vector<Host *> out, const json &attrs) {
  std::vector<OperandPlacement> placedIn, placedOut;
  int64_t offset = 0;
  for (Host *h : in)
    placedIn.push_back({{h->dtype, h->shape}, (offset += 4096)});
  for (Host *h : out)
    placedOut.push_back({{h->dtype, h->shape}, (offset += 4096)});
  CheckedKernel checked =
      checkKernel(*findKernelSpec(kernel), placedIn, placedOut, attrs);
  KernelContext ctx;
  KernelCall call{kernel, {}, {}, checked.attrs, ctx};
  for (Host *h : in)
    call.in.push_back(h->view());
  for (Host *h : out)
    call.out.push_back(h->view());
  kernelTable().at(kernel)(call);
}

/// Columns [begin, begin + width) of a row-major [rows, cols] matrix.
Host columns(const Host &m, int64_t begin, int64_t width) {
  Host out = f64({m.shape[0], width});
  for (int64_t r = 0; r < m.shape[0]; ++r)
    for (int64_t c = 0; c < width; ++c)
      out.f[r * width + c] = m.f[r * m.shape[1] + begin + c];
  return out;
}

} // namespace

TEST(VocabParallelKernels, CrossEntropyOverShardsEqualsTheWhole) {
  Host scores = f64({3, 6}, {0.3, -1.2, 2.0, 0.5, 0.1, -0.4,   //
                             1.5, 0.2, -0.3, 3.1, -2.0, 0.7,   //
                             -0.6, 0.9, 0.4, -1.1, 2.2, 1.3});
  Host labels = i64({3}, {1, 3, 5});
  Host loss = f64({}), logp = f64({3, 6}), dloss = f64({}, {1.0}),
       grad = f64({3, 6});
  launch("softmax_cross_entropy", {&scores, &labels}, {&loss, &logp},
         {{"reduction", "mean"}});
  launch("softmax_cross_entropy_grad", {&logp, &labels, &dloss}, {&grad},
         {{"reduction", "mean"}});

  // Two ranks of 3 classes: the row maxima and the stats all-reduced.
  Host max = f64({3, 1});
  for (int64_t r = 0; r < 3; ++r)
    max.f[r] = *std::max_element(&scores.f[r * 6], &scores.f[r * 6 + 6]);
  Host sums = f64({3, 2});
  std::vector<Host> local;
  for (int64_t rank = 0; rank < 2; ++rank) {
    local.push_back(columns(scores, 3 * rank, 3));
    Host stats = f64({3, 2});
    launch("vocab_parallel_cross_entropy_stats", {&local[rank], &max, &labels},
           {&stats}, {{"start", 3 * rank}});
    for (int64_t k = 0; k < 6; ++k)
      sums.f[k] += stats.f[k];
  }
  for (int64_t rank = 0; rank < 2; ++rank) {
    Host rankLoss = f64({}), rankLogp = f64({3, 3}), rankGrad = f64({3, 3});
    launch("vocab_parallel_cross_entropy", {&local[rank], &max, &sums, &labels},
           {&rankLoss, &rankLogp}, json::object());
    launch("vocab_parallel_cross_entropy_grad", {&rankLogp, &labels, &dloss},
           {&rankGrad}, {{"start", 3 * rank}});
    EXPECT_NEAR(rankLoss.f[0], loss.f[0], 1e-13);
    Host wholeLogp = columns(logp, 3 * rank, 3),
         wholeGrad = columns(grad, 3 * rank, 3);
    for (int64_t k = 0; k < 9; ++k) {
      EXPECT_NEAR(rankLogp.f[k], wholeLogp.f[k], 1e-13) << rank << " " << k;
      EXPECT_NEAR(rankGrad.f[k], wholeGrad.f[k], 1e-13) << rank << " " << k;
    }
  }
}

TEST(VocabParallelKernels, LookupsOverShardsSumToTheWhole) {
  Host table = f64({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Host ids = i64({3}, {3, 0, 3});
  Host whole = f64({3, 2});
  launch("gather", {&table, &ids}, {&whole}, {{"axis", 0}});
  Host dy = f64({3, 2}, {1, 2, 3, 4, 5, 6});
  Host wholeGrad = f64({4, 2});
  launch("gather_grad", {&dy, &ids}, {&wholeGrad},
         {{"axis", 0}, {"shape", {4, 2}}});
  Host summed = f64({3, 2});
  for (int64_t rank = 0; rank < 2; ++rank) {
    Host rows = f64({2, 2}, {table.f.begin() + 4 * rank,
                             table.f.begin() + 4 * rank + 4});
    Host part = f64({3, 2}), grad = f64({2, 2});
    launch("vocab_parallel_gather", {&rows, &ids}, {&part},
           {{"start", 2 * rank}});
    launch("vocab_parallel_gather_grad", {&dy, &ids}, {&grad},
           {{"start", 2 * rank}, {"rows", 2}});
    for (int64_t k = 0; k < 6; ++k)
      summed.f[k] += part.f[k];
    for (int64_t k = 0; k < 4; ++k)
      EXPECT_EQ(grad.f[k], wholeGrad.f[4 * rank + k]) << rank << " " << k;
  }
  EXPECT_EQ(summed.f, whole.f);
}
