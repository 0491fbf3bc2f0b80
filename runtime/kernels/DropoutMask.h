//===- DropoutMask.h - the dropout mask, host/device ------------*- C++ -*-===//
//
// The mask bits of a dropout (docs/plan-format.md): Philox4x32-10 with key
// (seed low, seed high) and counter (g / 4, rng_id, micro-batch, step);
// element g of the whole tensor keeps its value when uniform01(word g % 4)
// >= ratio. A tensor-parallel shard draws its elements' bits of the whole
// tensor (`global`), so masks depend neither on the number of ranks nor on
// the backend: the CPU kernel (a block cached across four elements) and
// the CUDA one (a block per element) call these functions.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_KERNELS_DROPOUTMASK_H
#define WEFT_RUNTIME_KERNELS_DROPOUTMASK_H

#include "Kernel.h"
#include "Philox.h"

namespace weft::rt {

struct DropoutMask {
  PhiloxKey key{};
  uint32_t rngId = 0, microBatch = 0, step = 0;
  float ratio = 0;
  /// The shard's layout (attributes shard_dim d, shard_blocks b,
  /// shard_count c, shard_index t): the local dim d of size n holds, per
  /// block k, the whole tensor's entries (k c + t) n/b + r, r < n/b.
  /// `sharded` false: the tensor is whole and g = e.
  bool sharded = false;
  int64_t n = 1, inner = 1, width = 1, count = 1, index = 0;

  /// The flat index in the whole tensor of local element `e`.
  WEFT_HOST_DEVICE int64_t global(int64_t e) const {
    if (!sharded)
      return e;
    int64_t r = e % inner, l = e / inner % n, o = e / inner / n;
    int64_t row = (l / width * count + index) * width + l % width;
    return (o * n * count + row) * inner + r;
  }
  /// The random bits of the block holding whole-tensor element `g`.
  WEFT_HOST_DEVICE PhiloxBlock block(int64_t g) const {
    return philox4x32({{uint32_t(g / 4), rngId, microBatch, step}}, key);
  }
  /// Whether element `g` keeps its value, from its block's bits.
  WEFT_HOST_DEVICE bool keeps(const PhiloxBlock &bits, int64_t g) const {
    return uniform01(bits[g % 4]) >= ratio;
  }

  /// The mask of a dropout call on `x`: seed (the `seed` attribute, else
  /// the run's), rng_id, the shard attributes, the call's micro-batch and
  /// step.
  static DropoutMask of(const KernelCall &call, const Tensor &x) {
    return of(call, x.shape, call.f("ratio"));
  }
  /// The same for a mask of local `shape` drawn with `ratio` (a fused
  /// attention's, over its probabilities).
  static DropoutMask of(const KernelCall &call,
                        const std::vector<int64_t> &shape, double ratio) {
    DropoutMask m;
    uint64_t seed = call.has("seed") ? uint64_t(call.i("seed")) : call.ctx.seed;
    m.key = {{uint32_t(seed), uint32_t(seed >> 32)}};
    m.rngId = call.has("rng_id") ? uint32_t(call.i("rng_id")) : 0;
    m.microBatch = uint32_t(call.ctx.microBatch);
    m.step = uint32_t(call.ctx.step);
    m.ratio = static_cast<float>(ratio);
    if (!call.has("shard_dim"))
      return m;
    int64_t d = call.i("shard_dim");
    m.sharded = true;
    m.n = shape[d];
    for (size_t i = d + 1; i < shape.size(); ++i)
      m.inner *= shape[i];
    m.width = m.n / call.i("shard_blocks");
    m.count = call.i("shard_count");
    m.index = call.i("shard_index");
    return m;
  }
};

} // namespace weft::rt

#endif // WEFT_RUNTIME_KERNELS_DROPOUTMASK_H
