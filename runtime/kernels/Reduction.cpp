//===- Reduction.cpp - reduce_sum / reduce_mean / reduce_max --------------===//

#include "Kernel.h"

#include <algorithm>
#include <limits>

namespace weft::rt {

namespace {

enum class Reduce { Sum, Mean, Max };

template <Reduce Kind> void reduce(const KernelCall &call) {
  const Tensor &x = call.in[0], &y = call.out[0];
  std::vector<int64_t> axes = call.ints("axes");
  // For each input dim, the stride of the output element it maps to (0 for
  // reduced dims): iterating the input accumulates into the right output.
  std::vector<int64_t> outStrides(x.rank(), 0);
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      kept.push_back(x.shape[d]);
  std::vector<int64_t> keptStrides = stridesOf(kept);
  for (int64_t d = 0, k = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      outStrides[d] = keptStrides[k++];
  int64_t count = y.numel() ? x.numel() / y.numel() : 0;
  dispatchNumeric(call, x.dtype, [&]<typename T>() {
    const T *in = x.as<T>();
    T *out = y.as<T>();
    std::vector<double> acc(
        y.numel(),
        Kind == Reduce::Max ? -std::numeric_limits<double>::infinity() : 0.0);
    std::array<std::vector<int64_t>, 1> strides = {outStrides};
    // A row at a time: a reduced last dim sums its row (in vector lanes,
    // in double), a kept one adds the row into the accumulators.
    forEachRow<1>(
        x.shape, strides,
        [&](int64_t i, const auto &base, int64_t n, const auto &step) {
          const T *row = in + i;
          double *a = acc.data() + base[0];
          if constexpr (Kind == Reduce::Max) {
            for (int64_t j = 0; j < n; ++j)
              a[j * step[0]] =
                  std::max(a[j * step[0]], static_cast<double>(row[j]));
          } else if (step[0] == 0) {
            double sum = 0;
#pragma omp simd reduction(+ : sum)
            for (int64_t j = 0; j < n; ++j)
              sum += row[j];
            *a += sum;
          } else {
            for (int64_t j = 0; j < n; ++j)
              a[j * step[0]] += row[j];
          }
        });
    for (int64_t o = 0; o < y.numel(); ++o)
      out[o] = static_cast<T>(Kind == Reduce::Mean ? acc[o] / count : acc[o]);
  });
}

} // namespace

void registerReductionKernels(KernelTable &t) {
  t[Op::ReduceSum] = reduce<Reduce::Sum>;
  t[Op::ReduceMean] = reduce<Reduce::Mean>;
  t[Op::ReduceMax] = reduce<Reduce::Max>;
}

} // namespace weft::rt
