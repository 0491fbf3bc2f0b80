//===- VocabParallel.cpp - vocab-parallel embedding and cross-entropy -----===//
//
// A rank's share of a vocab-sharded table: rows (classes) [start, start +
// rows). The formulas are documented on the ops (WeftParallelOps.td).
//
//===----------------------------------------------------------------------===//

#include "Kernel.h"

#include <cmath>
#include <cstring>

namespace weft::rt {

namespace {

/// The index tensor's element e as int64.
int64_t indexAt(const Tensor &indices, int64_t e) {
  return indices.dtype == DType::I32 ? indices.as<int32_t>()[e]
                                     : indices.as<int64_t>()[e];
}

void vocabGather(const KernelCall &call) {
  const Tensor &table = call.in[0], &indices = call.in[1], &out = call.out[0];
  int64_t start = call.i("start"), rows = table.shape[0];
  int64_t rowBytes = table.bytes() / rows;
  char *dst = static_cast<char *>(out.data);
  const char *src = static_cast<const char *>(table.data);
  for (int64_t e = 0, n = indices.numel(); e < n; ++e) {
    int64_t row = indexAt(indices, e) - start;
    if (row >= 0 && row < rows)
      std::memcpy(dst + e * rowBytes, src + row * rowBytes, rowBytes);
    else
      std::memset(dst + e * rowBytes, 0, rowBytes);
  }
}

void vocabGatherGrad(const KernelCall &call) {
  const Tensor &grad = call.in[0], &indices = call.in[1], &out = call.out[0];
  int64_t start = call.i("start"), rows = out.shape[0];
  int64_t width = out.numel() / rows;
  dispatchFloat(call, grad.dtype, [&]<typename T>() {
    const T *g = grad.as<T>();
    T *dst = out.as<T>();
    std::fill(dst, dst + out.numel(), T(0));
    for (int64_t e = 0, n = indices.numel(); e < n; ++e) {
      int64_t row = indexAt(indices, e) - start;
      if (row < 0 || row >= rows)
        continue;
      for (int64_t k = 0; k < width; ++k)
        dst[row * width + k] += g[e * width + k];
    }
  });
}

template <typename T> void vocabStats(const KernelCall &call) {
  const Tensor &scores = call.in[0], &labels = call.in[2];
  const T *s = scores.as<T>(), *max = call.in[1].as<T>();
  T *stats = call.out[0].as<T>();
  int64_t n = scores.shape[0], c = scores.shape[1], start = call.i("start");
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t k = 0; k < c; ++k)
      sum += std::exp(s[i * c + k] - max[i]);
    int64_t local = indexAt(labels, i) - start;
    stats[2 * i] = static_cast<T>(sum);
    stats[2 * i + 1] = local >= 0 && local < c ? s[i * c + local] : T(0);
  }
}

template <typename T> void vocabCrossEntropy(const KernelCall &call) {
  const Tensor &scores = call.in[0], &labels = call.in[3];
  const T *s = scores.as<T>(), *max = call.in[1].as<T>(),
          *stats = call.in[2].as<T>();
  T *logp = call.out[1].as<T>();
  int64_t n = scores.shape[0], c = scores.shape[1];
  bool ignore = call.has("ignore_index");
  int64_t ignored = ignore ? call.i("ignore_index") : 0;
  double total = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    T logSum = static_cast<T>(std::log(stats[2 * i]));
    for (int64_t k = 0; k < c; ++k)
      logp[i * c + k] = s[i * c + k] - max[i] - logSum;
    if (ignore && indexAt(labels, i) == ignored)
      continue;
    total += max[i] + logSum - stats[2 * i + 1];
    ++count;
  }
  call.out[0].as<T>()[0] = static_cast<T>(count ? total / count : 0.0);
}

template <typename T> void vocabCrossEntropyGrad(const KernelCall &call) {
  const Tensor &logProb = call.in[0], &labels = call.in[1];
  const T *logp = logProb.as<T>();
  T *dx = call.out[0].as<T>();
  int64_t n = logProb.shape[0], c = logProb.shape[1], start = call.i("start");
  bool ignore = call.has("ignore_index");
  int64_t ignored = ignore ? call.i("ignore_index") : 0;
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += !(ignore && indexAt(labels, i) == ignored);
  T scale = count ? call.in[2].as<T>()[0] / T(count) : T(0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t label = indexAt(labels, i);
    bool skip = ignore && label == ignored;
    for (int64_t k = 0; k < c; ++k) {
      T onehot = label - start == k ? T(1) : T(0);
      dx[i * c + k] = skip ? T(0) : (std::exp(logp[i * c + k]) - onehot) * scale;
    }
  }
}

} // namespace

void registerVocabParallelKernels(KernelTable &t) {
  t[Op::VocabParallelGather] = vocabGather;
  t[Op::VocabParallelGatherGrad] = vocabGatherGrad;
  t[Op::VocabParallelCrossEntropyStats] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype, [&]<typename T>() { vocabStats<T>(c); });
  };
  t[Op::VocabParallelCrossEntropy] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype,
                  [&]<typename T>() { vocabCrossEntropy<T>(c); });
  };
  t[Op::VocabParallelCrossEntropyGrad] = [](const KernelCall &c) {
    dispatchFloat(c, c.in[0].dtype,
                  [&]<typename T>() { vocabCrossEntropyGrad<T>(c); });
  };
}

} // namespace weft::rt
